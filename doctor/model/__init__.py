"""What the model is: finding it, its architecture card, its weights, KV cache and state sizes.

``resolve.model_card`` is the entry point every command uses: ``resolve`` finds the model (a local path, the
Hugging Face cache, then the Hub), ``config.load_config`` parses a local config, ``architecture.analyze`` turns
it into a :class:`~doctor.model.card.ModelCard` (every answer with the fields that decided it), and
``weights.sized_card`` settles its weights — exact from the safetensors headers (``checkpoint``) when they can be
read, else priced from the shapes at the served checkpoint's quantization. ``kvcache`` sizes the KV cache and
recurrent state the way vLLM and SGLang lay them out, ``names`` reads what a bare model name says, and
``facts.model_facts`` publishes the card as ``model.*`` facts for the playbooks.
"""
