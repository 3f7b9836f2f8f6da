"""Lambda's synchronous payload limit"""

MAX_REQUEST_BYTES = 6 * 1024 * 1024
