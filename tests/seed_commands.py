"""The launch commands printed in fixtures/seed/serving-playbook.txt, copied as test data (our own seed),
shared by the command-parser, lint and check tests. Slips are kept as printed: the tests assert them."""

SEED_GLM_HANDOVER = """python3 -m sglang.launch_server \\
  --model nvidia/GLM-5.2-NVFP4 \\
  --tensor-parallel-size 8 \\
  --quantization modelopt_fp4 \\
  --tool-call-parser glm47 \\
  --reasoning-parser glm45 \\
  --chunked-prefill-size 16384 \\
  --mem-fraction-static 0.80"""

SEED_GQA = """python -m sglang.launch_server \\
  --model-path Qwen/Qwen3.6-27B \\
  --tp-size 2 \\
  --quantization fp8 --kv-cache-dtype fp8_e5m2 \\
  --chunked-prefill-size 4096 \\
  --enable-metrics"""

SEED_DSV3 = """# vLLM, DeepSeek V3, 8×H200
vllm serve deepseek-ai/DeepSeek-V3 \\
  --tensor-parallel-size 8 \\
  --dtype fp8 --kv-cache-dtype fp8 \\
  --max-model-len 131072 \\
  --gpu-memory-utilization 0.92"""

SEED_DSV3_EP = """# For large scale, EP + DP attention
vllm serve deepseek-ai/DeepSeek-V3 \\
  -dp 8 --enable-expert-parallel \\
  --dtype fp8 --kv-cache-dtype fp8"""

SEED_GLM_DSA = """# SGLang, GLM-5.2 NVFP4, 8×B300
python3 -m sglang.launch_server \\
  --model nvidia/GLM-5.2-NVFP4 \\
  --tensor-parallel-size 8 \\
  --quantization modelopt_fp4 \\
  --tool-call-parser glm47 \\
  --reasoning-parser glm45 \\
  --trust-remote-code \\
  --chunked-prefill-size 16384 \\
  --mem-fraction-static 0.80"""

SEED_QWEN35_MM = """vllm serve Qwen/Qwen3.5-397B-A17B-FP8 \\
  -dp 8 --enable-expert-parallel \\
  --mm-encoder-tp-mode data \\
  --mm-processor-cache-type shm \\
  --reasoning-parser qwen3 \\
  --enable-prefix-caching"""

SEED_QWEN35 = """vllm serve Qwen/Qwen3.5-397B-A17B-FP8 \\
  -dp 8 --enable-expert-parallel \\
  --language-model-only \\
  --reasoning-parser qwen3 \\
  --enable-prefix-caching"""

# "Same Conditions, Different Architectures": flag sets without the launcher
