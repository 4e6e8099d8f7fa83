"""Per-engine knowledge: versioned catalogs read from the real wheels, launch-command parsing.

``catalog`` loads one release's view of ``catalogs/<engine>.json`` (the release history); ``command`` parses a pasted launch command
against the right catalog; ``launch_facts`` turns it into engine-neutral ``launch.*`` facts using
``semantics.yaml``. Nothing here imports an engine: keep this module import-free (start-up time).
"""
