"""What the user hands over, as facts: a launch command, a model config, a GPU name, recorded files (a /metrics
scrape, a /server_info body, nvidia-smi output, the server log), a Kubernetes manifest, a snapshot to replay.

offline.py gathers them all (``gather``), in the order their dependencies need; manifest.py reads the launch out
of a manifest; snapshot.py writes and replays a run's raw probe answers. What is read live is doctor/probes.
"""
