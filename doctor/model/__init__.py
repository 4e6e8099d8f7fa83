"""What the model is, from its config.json alone: loading, architecture card, KV cache and state sizes.

``config.load_config`` finds and parses a config, ``architecture.analyze`` turns it into a
:class:`~doctor.model.architecture.ModelCard` (every answer with the fields that decided it),
``kvcache`` sizes the KV cache and recurrent state the way vLLM and SGLang lay them out, and
``facts.model_facts`` publishes the card as ``model.*`` facts for the playbooks.
"""
