"""Launch commands and engine output from public 2023-2024 threads, quoted as data with their source (machine
output only: the command as posted, the usage or Namespace the engine printed). tests/test_old_releases.py reads
them against the catalogs of vLLM 0.2.0-0.5.5 and SGLang 0.1.3-0.3.6 and their launchers' own parsers."""

#: https://github.com/vllm-project/vllm/issues/3651 (2024-03-27, "vllm==0.3.3"): the demo server refused --api-key.
VLLM_033_DEMO_API_KEY = ("python -m vllm.entrypoints.api_server --model /root/autodl-tmp/Qwen15_14B_Chat_sft "
                         "--tensor-parallel-size 2  --max-model-len 12800 --port 8080  --api-key token-temp")
#: the same thread: the start of the usage vLLM 0.3.3's demo server printed with its refusal (cut where the
#: thread's excerpt is cut)
VLLM_033_DEMO_USAGE = (
    "usage: api_server.py [-h] [--host HOST] [--port PORT] [--ssl-keyfile SSL_KEYFILE] [--ssl-certfile SSL_CERTFILE] "
    "[--root-path ROOT_PATH] [--model MODEL] [--tokenizer TOKENIZER] [--revision REVISION] "
    "[--code-revision CODE_REVISION]\n"
    "                     [--tokenizer-revision TOKENIZER_REVISION] [--tokenizer-mode {auto,slow}] "
    "[--trust-remote-code] [--download-dir DOWNLOAD_DIR] [--load-format {auto,pt,safetensors,npcache,dummy}] "
    "[--dtype {auto,half,float16,bfloat16,float,float32}]\n"
    "                     [--kv-cache-dtype {auto,fp8_e5m2}] [--max-model-len MAX_MODEL_LEN] [--worker-use-ray] "
    "[--pipeline-parallel-size PIPELINE_PARALLEL_SIZE] [--tensor-parallel-size TENSOR_PARALLEL_SIZE] "
    "[--max-parallel-loading-workers MAX_PARALLEL_LOADING_WORKERS]\n"
    "                     [--block-size {8,16,32,128}] [--seed SEED] [--swap-space SWAP_SPACE] "
    "[--gpu-memory-utilization GPU_MEMORY_UTILIZATION] [--max-num-batched-tokens MAX_NUM_BATCHED_TOKENS] "
    "[--max-num-seqs MAX_NUM_SEQS] [--max-paddings MAX_PADDINGS]\n"
    "                     [--disable-log-stats]")

#: https://github.com/vllm-project/vllm/issues/6228 (2024-07-08): the OpenAI server of vLLM 0.5.1, and the
#: start of the argparse Namespace it logged ("vLLM API server version 0.5.1"; cut where the excerpt is cut).
VLLM_051_OPENAI = ("NAME='Llama-3-70B-Instruct' && python -m vllm.entrypoints.openai.api_server --host 0.0.0.0 "
                   "--port 8000 --served-model-name $NAME --model /home/azureuser/cloudfiles/code/Users/user/"
                   "llama_setup/model_catalog_llama/Meta-Llama-3-70B-Instruct/mlflow_model_folder/data/model/ "
                   "--tensor-parallel-size 8 --trust-remote-code")
VLLM_051_NAMESPACE_DESTS = (
    "allow_credentials", "allowed_headers", "allowed_methods", "allowed_origins", "api_key", "block_size",
    "chat_template", "code_revision", "device", "disable_custom_all_reduce", "disable_log_requests",
    "disable_log_stats", "disable_sliding_window", "distributed_executor_backend", "download_dir", "dtype",
    "enable_chunked_prefill", "enable_lora", "enable_prefix_caching", "enforce_eager", "engine_use_ray",
    "fully_sharded_loras", "gpu_memory_utilization", "guided_decoding_backend", "host", "kv_cache_dtype",
    "load_format", "long_lora_scaling_factors", "lora_dtype", "lora_extra_vocab_size", "lora_modules")

#: https://github.com/vllm-project/vllm/pull/1215 (2023-09-28, the day vLLM 0.2.0 shipped): a proposed
#: --conv-template the OpenAI server never got (the PR was closed unmerged).
VLLM_020_CONV_TEMPLATE = ('python -m vllm.entrypoints.openai.api_server --served-model-name "gpt-4" '
                          '--conv-template "vicuna_v1.1"  --model TheBloke/WizardLM-13B-V1.2-AWQ --quantization awq')

#: https://github.com/haotian-liu/LLaVA/issues/1289 (2024-03-16): an SGLang worker for LLaVA-1.6.
SGLANG_LLAVA_2024 = ("CUDA_VISIBLE_DEVICES=1,2,3,4 python -m sglang.launch_server --model-path models/llava-v1.6-34b "
                     "--tokenizer-path models/llava-v1.6-34b-tokenizer --port 30000 --tp 4")

#: https://github.com/sgl-project/sglang/issues/565 (2024-06-25, "sglang==0.1.17"): --enable-flashinfer, a flag of
#: SGLang 0.1.x that no release from 0.4.0 on has.
SGLANG_0117_FLASHINFER = ("python -m sglang.launch_server --model-path /mnt/ebs_volume/models/llama/llama-3-8b-instruct "
                          "--tp-size=4 --mem-fraction-static=0.75 --port 30000 --enable-flashinfer")
