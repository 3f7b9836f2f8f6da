"""Request limits that every front shares (API Gateway in AWS, the local HTTP front).

Lambda takes at most 6 MB in a synchronous invocation, the whole API Gateway event included, so a
request body must stay under that: API Gateway itself would accept 10 MB and then fail the call. Larger
files go through `POST /v1/documents/upload` (in AWS a presigned S3 PUT, with no such limit)."""

MAX_REQUEST_BYTES = 6 * 1024 * 1024
MAX_REQUEST_MB = MAX_REQUEST_BYTES // (1024 * 1024)
TOO_LARGE_MESSAGE = (
    f"request bodies are limited to {MAX_REQUEST_MB} MB; send larger files with POST /v1/documents/upload"
)

# engram local streams the body of a route marked `streamed_body` (an import) to its handler piece by piece,
# so its size is bounded by this, not by memory.
MAX_STREAMED_REQUEST_BYTES = 8 * 1024 * 1024 * 1024
STREAMED_TOO_LARGE_MESSAGE = (
    f"this request's body is limited to {MAX_STREAMED_REQUEST_BYTES // 1024**3} GB here; split the file"
)

# Custom extraction instructions (a tenant's, a container's): longer ones are refused by the API and
# cut by the extraction prompt.
MAX_INSTRUCTION_CHARS = 2000


def file_too_large(size: int, limit: int, *, exact: bool = True, subject: str = "the file") -> str | None:
    """Why a file of `size` bytes is refused, or None when it is within `limit` (ENGRAM_MAX_FILE_BYTES).

    Every way a file comes in (the documents API, the upload, the drop folder, S3, a fetched URL, the
    pipeline's read) asks this, so the file is refused with the same words wherever it arrived.
    `exact=False`: a reader that stopped past the limit knows only that the file is larger."""
    if size <= limit:
        return None
    said = f"{size} bytes" if exact else f"over {limit} bytes"
    return f"{subject} is {said}; the limit is {limit} bytes (ENGRAM_MAX_FILE_BYTES)"
