"""The pipeline's steps, one module each (a step's Lambda imports only its own), as plain functions of
(context, document reference); engram.pipeline.run names them by step.

Each step: (1) claims the document for its revision and sets the status (a short transaction);
(2) does its work outside any transaction; (3) writes its results in one transaction that first checks
the revision again. So a step either writes everything or nothing, a retried step overwrites its own
earlier attempt, and a superseded run (the document deleted or queued again) writes nothing.
"""
