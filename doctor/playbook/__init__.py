"""Playbooks: YAML decision trees (one per symptom) and the causes catalog they name.

loader.py reads and validates them, conditions.py evaluates a node's test over Facts (three-valued),
engine.py walks the trees into findings, template.py fills fixes from facts, docs.py writes docs/causes.md.
"""
