"""The engine catalog generator: static reading of vLLM / SGLang wheels (see tools/README.md)."""
