vllm serve "Qwen/Qwen3-8B --tensor-parallel-size 2 --served-model-name 'my model
