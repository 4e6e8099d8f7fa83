# Scenario launch script saved with Windows line endings (not a real capture).
vllm serve Qwen/Qwen3-8B \
  --tensor-parallel-size 2 \
  --max-model-len 32768 \
  --enable-prefix-caching
