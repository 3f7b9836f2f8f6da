"""`make bench`: how fast and how good Engram is on this machine.

Run as `python -m tests.bench [--quick | --full] [--scale 10k,100k]`. Every figure is printed beside
its target and written to `.bench/latest.json` (and `.bench/history/`). No module here is named
`test_*`, so pytest never collects the benchmark; its helpers are tested in tests/unit.
"""
