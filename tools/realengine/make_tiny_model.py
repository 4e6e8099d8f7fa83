"""Build a tiny Qwen2-architecture model that a real vLLM serves on CPU in about a minute.

    python make_tiny_model.py OUT_DIR [--random]      (run by install_vllm_cpu.sh with the engine's venv)

Default: a "scripted" model. Whatever the prompt, it answers with one Hermes-style tool call
(<tool_call>{"name": "get_time", ...}</tool_call>) and stops, so a server started with
`--enable-auto-tool-choice --tool-call-parser hermes` returns real `tool_calls`, one with a wrong
parser leaves the markup in `content`, and one without a parser answers 400 to tool_choice=auto.
--random: random weights (output is noise; endpoints, metrics and the process are still real).

The tokenizer is trained here (BPE on the Python standard library's sources): nothing is downloaded.
head_dim is 64 (vLLM's CPU attention refuses 16). generation_config.json carries temperature 0.7.
"""
import glob
import json
import os
import sys
import sysconfig

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

out = sys.argv[1]
scripted = "--random" not in sys.argv[2:]
here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(out, exist_ok=True)

files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:200]
tok = Tokenizer(models.BPE(unk_token=None))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train(files, trainers.BpeTrainer(vocab_size=1000, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
tok.post_processor = processors.ByteLevel(trim_offsets=False)
CALL = '\n{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}\n'
tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ["<tool_call>", "</tool_call>", "<think>", "</think>", CALL]])
fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
with open(os.path.join(here, "chat_template.jinja")) as template:
    fast.chat_template = template.read()
fast.save_pretrained(out)
ids = {t: fast.convert_tokens_to_ids(t) for t in ["<tool_call>", "</tool_call>", CALL, "<|im_end|>", "<|endoftext|>"]}

H, V = 256, 1024
cfg = Qwen2Config(vocab_size=V, hidden_size=H, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=False,
                  eos_token_id=ids["<|im_end|>"], bos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<|endoftext|>"])
torch.manual_seed(0)
m = Qwen2ForCausalLM(cfg)
if scripted:
    with torch.no_grad():
        for layer in m.model.layers:  # layers add nothing: the next token depends on the current one only
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        m.model.norm.weight.fill_(1.0)
        E = torch.randn(V, H) * 0.05
        E[:, 0] += H ** 0.5                       # ordinary tokens point along direction 0
        chain = [ids["<tool_call>"], ids[CALL], ids["</tool_call>"]]
        for k, t in enumerate(chain):             # the call's tokens along directions 1..3
            E[t] = 0
            E[t, k + 1] = H ** 0.5
        m.model.embed_tokens.weight.copy_(E)
        W = torch.zeros(V, H)
        W[chain[0], 0] = 2.0                      # ordinary -> <tool_call>
        W[chain[1], 1] = 2.0                      # <tool_call> -> the JSON
        W[chain[2], 2] = 2.0                      # the JSON -> </tool_call>
        W[ids["<|im_end|>"], 3] = 2.0             # </tool_call> -> end of turn
        m.lm_head.weight.copy_(W)
m.to(torch.bfloat16).save_pretrained(out)
with open(os.path.join(out, "generation_config.json"), "w") as generation:
    json.dump({"eos_token_id": cfg.eos_token_id, "bos_token_id": cfg.bos_token_id, "do_sample": True,
               "temperature": 0.7, "top_p": 0.8}, generation)
print(f"model written to {out} ({'scripted tool call' if scripted else 'random weights'})")
