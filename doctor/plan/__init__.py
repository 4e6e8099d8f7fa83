"""`llmdoctor plan`: a serving design derived from config.json, the GPUs and the traffic (doctor/plan/planner.py).

Modules, one job each: request (options and demand), weights, capacity, parallelism, flags, commands, verdict,
instead (what would fit), document (the JSON schema); rules.yaml holds every threshold.
"""
