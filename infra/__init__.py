"""The CDK app that deploys Engram to AWS: one construct per capability, composed by `stack.py`."""
