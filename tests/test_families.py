"""The model-family parser table: validated against the parser names the engines really register.

The registries below were read from the real wheels (``pip download --no-deps``; never installed or imported):
vLLM 0.5.5 to 0.33.0 and SGLang 0.4.0 to 0.5.23, unpacking only the parser registries
(vllm/tool_parsers/__init__.py and vllm/reasoning/__init__.py dicts, the older
``@ToolParserManager.register_module`` / ``@ReasoningParserManager.register_module`` decorators under
vllm/entrypoints/openai/tool_parsers and vllm/entrypoints/openai/reasoning_parsers, the 0.6.0 ``--tool-call-parser``
choices in vllm/entrypoints/openai/cli_args.py, SGLang's ``ToolCallParserEnum`` in
sglang/srt/function_call*/function_call_parser.py and ``DetectorMap`` in sglang/srt/reasoning_parser.py or
sglang/srt/parser/reasoning_parser.py).

Each entry: name -> (first release checked that registers it, file:line there, the release checked just before
it (absent there), file:line in the newest release or None when the name was removed). For the names the table
uses, the releases were bisected, so "before" is the PyPI release immediately preceding "first"; for other names
"first" is the first of the releases that were unpacked. Releases unpacked: vLLM 0.5.5 0.6.0 0.6.1.post2 0.6.2 0.6.3
0.6.3.post1 0.6.4 0.6.4.post1 0.6.5 0.7.0 0.7.1 0.7.2 0.8.0 0.8.5 0.8.5.post1 0.9.0 0.9.1 0.9.2 0.10.0 0.10.1
0.10.1.1 0.10.2 0.11.0 0.11.1 0.11.2 0.12.0 0.13.0 0.14.0 0.14.1 0.15.0 0.16.0 0.17.0 0.17.1 0.18.0 0.18.1 0.19.0
0.19.1 0.20.0 0.22.0 0.23.0 0.24.0 0.25.0 0.26.0 0.27.0 0.29.0 0.30.0 0.31.0 0.33.0; SGLang every release from
0.4.0 to 0.5.23 except the 0.4.2.post*/0.4.4.post*/0.4.7.post1 patch releases.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doctor.engines import families as fam
from doctor.errors import InputError
from tests.conftest import ROOT, SHARED_FIXTURES, requires_shared

VLLM_TOOL = {
    'apertus': ('0.22.0', 'vllm/tool_parsers/__init__.py:189', '0.20.0', 'vllm/tool_parsers/__init__.py:257'),
    'beam': ('0.33.0', 'vllm/tool_parsers/__init__.py:93', '0.31.0', 'vllm/tool_parsers/__init__.py:93'),
    'cohere_command3': ('0.22.0', 'vllm/tool_parsers/__init__.py:41', '0.20.0', 'vllm/tool_parsers/__init__.py:49'),
    'cohere_command4': ('0.22.0', 'vllm/tool_parsers/__init__.py:45', '0.20.0', 'vllm/tool_parsers/__init__.py:53'),
    'deepseek_v3': ('0.9.0', 'vllm/entrypoints/openai/tool_parsers/deepseekv3_tool_parser.py:22', '0.8.5.post1', 'vllm/tool_parsers/__init__.py:29'),
    'deepseek_v31': ('0.10.2', 'vllm/entrypoints/openai/tool_parsers/deepseekv31_tool_parser.py:23', '0.10.1.1', 'vllm/tool_parsers/__init__.py:33'),
    'deepseek_v32': ('0.13.0', 'vllm/tool_parsers/__init__.py:33', '0.12.0', 'vllm/tool_parsers/__init__.py:37'),
    'deepseek_v4': ('0.20.0', 'vllm/tool_parsers/__init__.py:37', '0.19.1', 'vllm/tool_parsers/__init__.py:41'),
    'deepseek_v41': ('0.30.0', 'vllm/tool_parsers/__init__.py:45', '0.29.0', 'vllm/tool_parsers/__init__.py:45'),
    'dots': ('0.29.0', 'vllm/tool_parsers/__init__.py:25', '0.27.0', 'vllm/tool_parsers/__init__.py:25'),
    'ernie45': ('0.11.1', 'vllm/entrypoints/openai/tool_parsers/__init__.py:33', '0.11.0', 'vllm/tool_parsers/__init__.py:57'),
    'functiongemma': ('0.14.0', 'vllm/tool_parsers/__init__.py:145', '0.13.0', 'vllm/tool_parsers/__init__.py:249'),
    'gemma4': ('0.19.0', 'vllm/tool_parsers/__init__.py:157', '0.18.1', 'vllm/tool_parsers/__init__.py:253'),
    'gigachat3': ('0.13.0', 'vllm/tool_parsers/__init__.py:137', '0.12.0', 'vllm/tool_parsers/__init__.py:245'),
    'glm45': ('0.10.1', 'vllm/entrypoints/openai/tool_parsers/glm4_moe_tool_parser.py:25', '0.10.0', 'vllm/tool_parsers/__init__.py:61'),
    'glm47': ('0.14.0', 'vllm/tool_parsers/__init__.py:45', '0.13.0', 'vllm/tool_parsers/__init__.py:65'),
    'glm4_moe': ('0.10.0', 'vllm/entrypoints/openai/tool_parsers/glm4_moe_tool_parser.py:23', '0.9.2', None),
    'granite': ('0.6.4', 'vllm/entrypoints/openai/tool_parsers/granite_tool_parser.py:25', '0.6.3.post1', 'vllm/tool_parsers/__init__.py:77'),
    'granite-20b-fc': ('0.6.4', 'vllm/entrypoints/openai/tool_parsers/granite_20b_fc_tool_parser.py:27', '0.6.3.post1', 'vllm/tool_parsers/__init__.py:73'),
    'granite4': ('0.18.0', 'vllm/tool_parsers/__init__.py:57', '0.17.1', 'vllm/tool_parsers/__init__.py:81'),
    'hermes': ('0.6.0', 'vllm/entrypoints/openai/cli_args.py:177', '0.5.5', 'vllm/tool_parsers/__init__.py:85'),
    'hf': ('0.33.0', 'vllm/tool_parsers/__init__.py:89', '0.31.0', 'vllm/tool_parsers/__init__.py:89'),
    'hunyuan_a13b': ('0.10.0', 'vllm/entrypoints/openai/tool_parsers/hunyuan_a13b_tool_parser.py:26', '0.9.2', 'vllm/tool_parsers/__init__.py:101'),
    'hy_v3': ('0.20.0', 'vllm/tool_parsers/__init__.py:73', '0.19.1', 'vllm/tool_parsers/__init__.py:105'),
    'hy_v4': ('0.29.0', 'vllm/tool_parsers/__init__.py:97', '0.27.0', 'vllm/tool_parsers/__init__.py:109'),
    'inkling': ('0.26.0', 'vllm/tool_parsers/__init__.py:177', '0.25.0', 'vllm/tool_parsers/__init__.py:237'),
    'internlm': ('0.6.3', 'vllm/entrypoints/openai/tool_parsers/internlm2_tool_parser.py:23', '0.6.2', 'vllm/tool_parsers/__init__.py:113'),
    'jamba': ('0.6.4', 'vllm/entrypoints/openai/tool_parsers/jamba_tool_parser.py:24', '0.6.3.post1', 'vllm/tool_parsers/__init__.py:117'),
    'k2_horizon': ('0.30.0', 'vllm/tool_parsers/__init__.py:125', '0.29.0', 'vllm/tool_parsers/__init__.py:133'),
    'kimi_k2': ('0.10.0', 'vllm/entrypoints/openai/tool_parsers/kimi_k2_tool_parser.py:23', '0.9.2', 'vllm/tool_parsers/__init__.py:125'),
    'kimi_k3': ('0.27.0', 'vllm/tool_parsers/__init__.py:105', '0.26.0', 'vllm/tool_parsers/__init__.py:129'),
    'lfm2': ('0.22.0', 'vllm/tool_parsers/__init__.py:97', '0.20.0', 'vllm/tool_parsers/__init__.py:121'),
    'ling3': ('0.29.0', 'vllm/tool_parsers/__init__.py:65', '0.27.0', 'vllm/tool_parsers/__init__.py:69'),
    'llama3_json': ('0.6.3', 'vllm/entrypoints/openai/tool_parsers/llama_tool_parser.py:45', '0.6.2', 'vllm/tool_parsers/__init__.py:137'),
    'llama4_json': ('0.8.5', 'vllm/entrypoints/openai/tool_parsers/llama_tool_parser.py:30', '0.8.0', 'vllm/tool_parsers/__init__.py:141'),
    'llama4_pythonic': ('0.9.0', 'vllm/entrypoints/openai/tool_parsers/llama4_pythonic_tool_parser.py:26', '0.8.5.post1', 'vllm/tool_parsers/__init__.py:145'),
    'longcat': ('0.11.0', 'vllm/entrypoints/openai/tool_parsers/longcat_tool_parser.py:13', '0.10.2', 'vllm/tool_parsers/__init__.py:149'),
    'mimo': ('0.20.0', 'vllm/tool_parsers/__init__.py:105', '0.19.1', 'vllm/tool_parsers/__init__.py:153'),
    'minicpm5': ('0.23.0', 'vllm/tool_parsers/__init__.py:133', '0.22.0', 'vllm/tool_parsers/__init__.py:165'),
    'minimax': ('0.9.2', 'vllm/entrypoints/openai/tool_parsers/minimax_tool_parser.py:26', '0.9.1', None),
    'minimax_m2': ('0.11.1', 'vllm/entrypoints/openai/tool_parsers/__init__.py:85', '0.11.0', 'vllm/tool_parsers/__init__.py:157'),
    'minimax_m3': ('0.24.0', 'vllm/tool_parsers/__init__.py:129', '0.23.0', 'vllm/tool_parsers/__init__.py:161'),
    'mistral': ('0.6.0', 'vllm/entrypoints/openai/cli_args.py:177', '0.5.5', 'vllm/tool_parsers/__init__.py:169'),
    'muse': ('0.33.0', 'vllm/tool_parsers/__init__.py:181', '0.31.0', 'vllm/tool_parsers/__init__.py:181'),
    'muse_glimmer': ('0.29.0', 'vllm/tool_parsers/__init__.py:161', '0.27.0', 'vllm/tool_parsers/__init__.py:185'),
    'musespark1x': ('0.33.0', 'vllm/tool_parsers/__init__.py:190', '0.31.0', 'vllm/tool_parsers/__init__.py:190'),
    'olmo3': ('0.11.1', 'vllm/entrypoints/openai/tool_parsers/__init__.py:97', '0.11.0', 'vllm/tool_parsers/__init__.py:173'),
    'openai': ('0.10.2', 'vllm/entrypoints/openai/tool_parsers/openai_tool_parser.py:20', '0.10.1.1', 'vllm/tool_parsers/__init__.py:194'),
    'phi4_mini_json': ('0.8.5', 'vllm/entrypoints/openai/tool_parsers/phi4mini_tool_parser.py:22', '0.8.0', 'vllm/tool_parsers/__init__.py:198'),
    'plamo3': ('0.33.0', 'vllm/tool_parsers/__init__.py:177', '0.31.0', 'vllm/tool_parsers/__init__.py:177'),
    'poolside_v1': ('0.22.0', 'vllm/tool_parsers/__init__.py:77', '0.20.0', 'vllm/tool_parsers/__init__.py:97'),
    'pythonic': ('0.6.4', 'vllm/entrypoints/openai/tool_parsers/pythonic_tool_parser.py:24', '0.6.3.post1', 'vllm/tool_parsers/__init__.py:202'),
    'qwen3_coder': ('0.10.0', 'vllm/entrypoints/openai/tool_parsers/qwen3coder_tool_parser.py:25', '0.9.2', 'vllm/tool_parsers/__init__.py:206'),
    'qwen3_json': ('0.33.0', 'vllm/tool_parsers/__init__.py:213', '0.31.0', 'vllm/tool_parsers/__init__.py:213'),
    'qwen3_xml': ('0.11.0', 'vllm/entrypoints/openai/tool_parsers/qwen3xml_tool_parser.py:1057', '0.10.2', 'vllm/tool_parsers/__init__.py:217'),
    'seed_oss': ('0.10.2', 'vllm/entrypoints/openai/tool_parsers/seed_oss_tool_parser.py:28', '0.10.1.1', 'vllm/tool_parsers/__init__.py:221'),
    'step3': ('0.10.1', 'vllm/entrypoints/openai/tool_parsers/step3_tool_parser.py:25', '0.10.0', 'vllm/tool_parsers/__init__.py:225'),
    'step3p5': ('0.16.0', 'vllm/tool_parsers/__init__.py:137', '0.15.0', 'vllm/tool_parsers/__init__.py:229'),
    'step5': ('0.33.0', 'vllm/tool_parsers/__init__.py:233', '0.31.0', 'vllm/tool_parsers/__init__.py:233'),
    'xlam': ('0.9.2', 'vllm/entrypoints/openai/tool_parsers/xlam_tool_parser.py:25', '0.9.1', 'vllm/tool_parsers/__init__.py:241'),
}
VLLM_REASONING = {
    'GptOss': ('0.10.1', 'vllm/reasoning/gptoss_reasoning_parser.py:17', '0.10.0', None),
    'beam': ('0.33.0', 'vllm/reasoning/__init__.py:87', '0.31.0', 'vllm/reasoning/__init__.py:87'),
    'cohere_command3': ('0.22.0', 'vllm/reasoning/__init__.py:39', '0.20.0', 'vllm/reasoning/__init__.py:43'),
    'cohere_command4': ('0.22.0', 'vllm/reasoning/__init__.py:43', '0.20.0', 'vllm/reasoning/__init__.py:47'),
    'deepseek_r1': ('0.7.1', 'vllm/entrypoints/openai/reasoning_parsers/deepseek_r1_reasoning_parser.py:15', '0.7.0', 'vllm/reasoning/__init__.py:23'),
    'deepseek_v3': ('0.11.1', 'vllm/reasoning/__init__.py:27', '0.11.0', 'vllm/reasoning/__init__.py:27'),
    'deepseek_v4': ('0.20.0', 'vllm/reasoning/__init__.py:31', '0.19.1', 'vllm/reasoning/__init__.py:31'),
    'deepseek_v41': ('0.30.0', 'vllm/reasoning/__init__.py:35', '0.29.0', 'vllm/reasoning/__init__.py:35'),
    'ernie45': ('0.11.1', 'vllm/reasoning/__init__.py:31', '0.11.0', 'vllm/reasoning/__init__.py:51'),
    'gemma4': ('0.19.0', 'vllm/reasoning/__init__.py:35', '0.18.1', 'vllm/reasoning/__init__.py:55'),
    'glm45': ('0.10.1', 'vllm/reasoning/glm4_moe_reasoning_parser.py:17', '0.10.0', 'vllm/reasoning/__init__.py:59'),
    'glm47': ('0.24.0', 'vllm/reasoning/__init__.py:59', '0.23.0', 'vllm/reasoning/__init__.py:63'),
    'glm4_moe': ('0.10.0', 'vllm/reasoning/glm4_moe_reasoning_parser.py:17', '0.9.2', None),
    'granite': ('0.8.5', 'vllm/reasoning/granite_reasoning_parser.py:17', '0.8.0', 'vllm/reasoning/__init__.py:75'),
    'granite_thinking_parser': ('0.31.0', 'vllm/reasoning/__init__.py:79', '0.30.0', 'vllm/reasoning/__init__.py:79'),
    'hf': ('0.33.0', 'vllm/reasoning/__init__.py:83', '0.31.0', 'vllm/reasoning/__init__.py:83'),
    'holo2': ('0.13.0', 'vllm/reasoning/__init__.py:47', '0.12.0', 'vllm/reasoning/__init__.py:91'),
    'hunyuan_a13b': ('0.10.0', 'vllm/reasoning/hunyuan_a13b_reasoning_parser.py:18', '0.9.2', 'vllm/reasoning/__init__.py:95'),
    'hy_v3': ('0.20.0', 'vllm/reasoning/__init__.py:63', '0.19.1', 'vllm/reasoning/__init__.py:99'),
    'hy_v4': ('0.29.0', 'vllm/reasoning/__init__.py:87', '0.27.0', 'vllm/reasoning/__init__.py:103'),
    'inkling': ('0.26.0', 'vllm/reasoning/__init__.py:131', '0.25.0', 'vllm/reasoning/__init__.py:188'),
    'k2_horizon': ('0.30.0', 'vllm/reasoning/__init__.py:103', '0.29.0', 'vllm/reasoning/__init__.py:115'),
    'kimi_k2': ('0.11.1', 'vllm/reasoning/__init__.py:51', '0.11.0', 'vllm/reasoning/__init__.py:107'),
    'kimi_k3': ('0.27.0', 'vllm/reasoning/__init__.py:87', '0.26.0', 'vllm/reasoning/__init__.py:111'),
    'ling3': ('0.29.0', 'vllm/reasoning/__init__.py:63', '0.27.0', 'vllm/reasoning/__init__.py:67'),
    'mimo': ('0.20.0', 'vllm/reasoning/__init__.py:71', '0.19.1', 'vllm/reasoning/__init__.py:119'),
    'minicpmv': ('0.33.0', 'vllm/reasoning/__init__.py:123', '0.31.0', 'vllm/reasoning/__init__.py:123'),
    'minimax_m2': ('0.11.1', 'vllm/reasoning/__init__.py:55', '0.11.0', 'vllm/reasoning/__init__.py:127'),
    'minimax_m2_append_think': ('0.11.1', 'vllm/reasoning/__init__.py:59', '0.11.0', 'vllm/reasoning/__init__.py:131'),
    'minimax_m3': ('0.24.0', 'vllm/reasoning/__init__.py:99', '0.23.0', 'vllm/reasoning/__init__.py:135'),
    'mistral': ('0.10.0', 'vllm/reasoning/mistral_reasoning_parser.py:13', '0.9.2', 'vllm/reasoning/__init__.py:139'),
    'muse': ('0.33.0', 'vllm/reasoning/__init__.py:155', '0.31.0', 'vllm/reasoning/__init__.py:155'),
    'muse_glimmer': ('0.29.0', 'vllm/reasoning/__init__.py:127', '0.27.0', 'vllm/reasoning/__init__.py:159'),
    'musespark1x': ('0.33.0', 'vllm/reasoning/__init__.py:164', '0.31.0', 'vllm/reasoning/__init__.py:164'),
    'nemotron_v3': ('0.17.1', 'vllm/reasoning/__init__.py:71', '0.17.0', 'vllm/reasoning/__init__.py:143'),
    'olmo3': ('0.11.1', 'vllm/reasoning/__init__.py:67', '0.11.0', 'vllm/reasoning/__init__.py:147'),
    'openai_gptoss': ('0.10.2', 'vllm/reasoning/gptoss_reasoning_parser.py:18', '0.10.1.1', 'vllm/reasoning/__init__.py:71'),
    'plamo3': ('0.33.0', 'vllm/reasoning/__init__.py:151', '0.31.0', 'vllm/reasoning/__init__.py:151'),
    'poolside_v1': ('0.22.0', 'vllm/reasoning/__init__.py:35', '0.20.0', 'vllm/reasoning/__init__.py:39'),
    'qwen3': ('0.9.0', 'vllm/reasoning/qwen3_reasoning_parser.py:16', '0.8.5.post1', 'vllm/reasoning/__init__.py:168'),
    'seed_oss': ('0.11.0', 'vllm/reasoning/seedoss_reasoning_parser.py:8', '0.10.2', 'vllm/reasoning/__init__.py:172'),
    'step3': ('0.10.1', 'vllm/reasoning/step3_reasoning_parser.py:18', '0.10.0', 'vllm/reasoning/__init__.py:176'),
    'step3p5': ('0.16.0', 'vllm/reasoning/__init__.py:87', '0.15.0', 'vllm/reasoning/__init__.py:180'),
    'step5': ('0.33.0', 'vllm/reasoning/__init__.py:184', '0.31.0', 'vllm/reasoning/__init__.py:184'),
}
SGLANG_TOOL = {
    'apertus2509': ('0.5.13', 'sglang/srt/function_call/function_call_parser.py:60', '0.5.12.post1', 'sglang/srt/function_call/function_call_parser.py:78'),
    'beam': ('0.5.23', 'sglang/srt/function_call/function_call_parser.py:79', '0.5.22', 'sglang/srt/function_call/function_call_parser.py:79'),
    'cohere_command4': ('0.5.13', 'sglang/srt/function_call/function_call_parser.py:61', '0.5.12.post1', 'sglang/srt/function_call/function_call_parser.py:80'),
    'deepseekv3': ('0.4.5.post3', 'sglang/srt/function_call_parser.py:605', '0.4.5.post2', 'sglang/srt/function_call/function_call_parser.py:81'),
    'deepseekv31': ('0.5.1.post3', 'sglang/srt/function_call/function_call_parser.py:41', '0.5.1.post2', 'sglang/srt/function_call/function_call_parser.py:82'),
    'deepseekv32': ('0.5.6', 'sglang/srt/function_call/function_call_parser.py:44', '0.5.5.post3', 'sglang/srt/function_call/function_call_parser.py:83'),
    'deepseekv4': ('0.5.12', 'sglang/srt/function_call/function_call_parser.py:60', '0.5.11', 'sglang/srt/function_call/function_call_parser.py:84'),
    'deepseekv41': ('0.5.21', 'sglang/srt/function_call/function_call_parser.py:82', '0.5.20', 'sglang/srt/function_call/function_call_parser.py:85'),
    'dots': ('0.5.19', 'sglang/srt/function_call/function_call_parser.py:74', '0.5.18', 'sglang/srt/function_call/function_call_parser.py:86'),
    'gemma4': ('0.5.11', 'sglang/srt/function_call/function_call_parser.py:79', '0.5.10.post1', 'sglang/srt/function_call/function_call_parser.py:118'),
    'gigachat3': ('0.5.9', 'sglang/srt/function_call/function_call_parser.py:71', '0.5.8.post1', 'sglang/srt/function_call/function_call_parser.py:116'),
    'gigachat35': ('0.5.21', 'sglang/srt/function_call/function_call_parser.py:114', '0.5.20', 'sglang/srt/function_call/function_call_parser.py:117'),
    'glm': ('0.5.3.post1', 'sglang/srt/function_call/function_call_parser.py:40', '0.5.3', 'sglang/srt/function_call/function_call_parser.py:87'),
    'glm45': ('0.4.9.post5', 'sglang/srt/function_call/function_call_parser.py:41', '0.4.9.post4', 'sglang/srt/function_call/function_call_parser.py:88'),
    'glm47': ('0.5.7', 'sglang/srt/function_call/function_call_parser.py:50', '0.5.6.post2', 'sglang/srt/function_call/function_call_parser.py:89'),
    'gpt-oss': ('0.5.1', 'sglang/srt/function_call/function_call_parser.py:45', '0.4.10.post2', 'sglang/srt/function_call/function_call_parser.py:90'),
    'hermes': ('0.5.9', 'sglang/srt/function_call/function_call_parser.py:70', '0.5.8.post1', 'sglang/srt/function_call/function_call_parser.py:114'),
    'hunyuan': ('0.5.11', 'sglang/srt/function_call/function_call_parser.py:77', '0.5.10.post1', 'sglang/srt/function_call/function_call_parser.py:115'),
    'inkling': ('0.5.16', 'sglang/srt/function_call/function_call_parser.py:94', '0.5.15.post1', 'sglang/srt/function_call/function_call_parser.py:119'),
    'interns1': ('0.5.7', 'sglang/srt/function_call/function_call_parser.py:62', '0.5.6.post2', 'sglang/srt/function_call/function_call_parser.py:113'),
    'iquest_q1': ('0.5.21', 'sglang/srt/function_call/function_call_parser.py:117', '0.5.20', 'sglang/srt/function_call/function_call_parser.py:120'),
    'k2_horizon': ('0.5.20', 'sglang/srt/function_call/function_call_parser.py:84', '0.5.19', 'sglang/srt/function_call/function_call_parser.py:91'),
    'kimi_k2': ('0.4.9.post2', 'sglang/srt/function_call/function_call_parser.py:37', '0.4.9.post1', 'sglang/srt/function_call/function_call_parser.py:92'),
    'kimi_k3': ('0.5.17', 'sglang/srt/function_call/function_call_parser.py:75', '0.5.16', 'sglang/srt/function_call/function_call_parser.py:93'),
    'lfm2': ('0.5.9', 'sglang/srt/function_call/function_call_parser.py:57', '0.5.8.post1', 'sglang/srt/function_call/function_call_parser.py:94'),
    'ling3': ('0.5.19', 'sglang/srt/function_call/function_call_parser.py:82', '0.5.18', 'sglang/srt/function_call/function_call_parser.py:95'),
    'llama3': ('0.4.2', 'sglang/srt/function_call_parser.py:459', '0.4.1.post7', 'sglang/srt/function_call/function_call_parser.py:96'),
    'mimo': ('0.5.7', 'sglang/srt/function_call/function_call_parser.py:54', '0.5.6.post2', 'sglang/srt/function_call/function_call_parser.py:97'),
    'minicpm5': ('0.5.13', 'sglang/srt/function_call/function_call_parser.py:74', '0.5.12.post1', 'sglang/srt/function_call/function_call_parser.py:98'),
    'minimax-m2': ('0.5.4.post1', 'sglang/srt/function_call/function_call_parser.py:53', '0.5.4', 'sglang/srt/function_call/function_call_parser.py:109'),
    'minimax-m3': ('0.5.16', 'sglang/srt/function_call/function_call_parser.py:87', '0.5.15.post1', 'sglang/srt/function_call/function_call_parser.py:110'),
    'mistral': ('0.4.2', 'sglang/srt/function_call_parser.py:461', '0.4.1.post7', 'sglang/srt/function_call/function_call_parser.py:99'),
    'muse': ('0.5.18', 'sglang/srt/function_call/function_call_parser.py:82', '0.5.17', 'sglang/srt/function_call/function_call_parser.py:100'),
    'nanbeige': ('0.5.20', 'sglang/srt/function_call/function_call_parser.py:104', '0.5.19', 'sglang/srt/function_call/function_call_parser.py:111'),
    'poolside_v1': ('0.5.12', 'sglang/srt/function_call/function_call_parser.py:70', '0.5.11', 'sglang/srt/function_call/function_call_parser.py:101'),
    'pythonic': ('0.4.6.post2', 'sglang/srt/function_call_parser.py:774', '0.4.6.post1', 'sglang/srt/function_call/function_call_parser.py:102'),
    'qwen': ('0.5.3.post1', 'sglang/srt/function_call/function_call_parser.py:47', '0.5.3', 'sglang/srt/function_call/function_call_parser.py:103'),
    'qwen25': ('0.4.2', 'sglang/srt/function_call_parser.py:460', '0.4.1.post7', 'sglang/srt/function_call/function_call_parser.py:104'),
    'qwen3': ('0.4.9.post3', 'sglang/srt/function_call/function_call_parser.py:39', '0.4.9.post2', None),
    'qwen3_coder': ('0.4.9.post4', 'sglang/srt/function_call/function_call_parser.py:39', '0.4.9.post3', 'sglang/srt/function_call/function_call_parser.py:105'),
    'response_template': ('0.5.23', 'sglang/srt/function_call/function_call_parser.py:121', '0.5.22', 'sglang/srt/function_call/function_call_parser.py:121'),
    'spark25': ('0.5.19', 'sglang/srt/function_call/function_call_parser.py:93', '0.5.18', 'sglang/srt/function_call/function_call_parser.py:106'),
    'step3': ('0.4.10', 'sglang/srt/function_call/function_call_parser.py:43', '0.4.9.post6', 'sglang/srt/function_call/function_call_parser.py:107'),
    'step3p5': ('0.5.9', 'sglang/srt/function_call/function_call_parser.py:66', '0.5.8.post1', 'sglang/srt/function_call/function_call_parser.py:108'),
    'trinity': ('0.5.8', 'sglang/srt/function_call/function_call_parser.py:63', '0.5.7', 'sglang/srt/function_call/function_call_parser.py:112'),
}
SGLANG_REASONING = {
    'apertus2509': ('0.5.13', 'sglang/srt/parser/reasoning_parser.py:1066', '0.5.12.post1', 'sglang/srt/parser/reasoning_parser.py:2273'),
    'beam': ('0.5.23', 'sglang/srt/parser/reasoning_parser.py:2274', '0.5.22', 'sglang/srt/parser/reasoning_parser.py:2274'),
    'cohere_command4': ('0.5.13', 'sglang/srt/parser/reasoning_parser.py:1087', '0.5.12.post1', 'sglang/srt/parser/reasoning_parser.py:2307'),
    'deepseek-r1': ('0.4.3.post3', 'sglang/srt/reasoning_parser.py:133', '0.4.3.post2', 'sglang/srt/parser/reasoning_parser.py:2275'),
    'deepseek-v3': ('0.5.1', 'sglang/srt/reasoning_parser.py:516', '0.4.10.post2', 'sglang/srt/parser/reasoning_parser.py:2276'),
    'deepseek-v4': ('0.5.12', 'sglang/srt/parser/reasoning_parser.py:613', '0.5.11', 'sglang/srt/parser/reasoning_parser.py:2277'),
    'deepseek-v41': ('0.5.21', 'sglang/srt/parser/reasoning_parser.py:2262', '0.5.20', 'sglang/srt/parser/reasoning_parser.py:2278'),
    'dots': ('0.5.19', 'sglang/srt/parser/reasoning_parser.py:1936', '0.5.18', 'sglang/srt/parser/reasoning_parser.py:2279'),
    'gemma4': ('0.5.11', 'sglang/srt/parser/reasoning_parser.py:560', '0.5.10.post1', 'sglang/srt/parser/reasoning_parser.py:2303'),
    'gigachat35': ('0.5.21', 'sglang/srt/parser/reasoning_parser.py:2288', '0.5.20', 'sglang/srt/parser/reasoning_parser.py:2304'),
    'glm45': ('0.4.9.post5', 'sglang/srt/reasoning_parser.py:234', '0.4.9.post4', 'sglang/srt/parser/reasoning_parser.py:2280'),
    'gpt-oss': ('0.5.1', 'sglang/srt/reasoning_parser.py:518', '0.4.10.post2', 'sglang/srt/parser/reasoning_parser.py:2283'),
    'granite_thinking_parser': ('0.5.20', 'sglang/srt/parser/reasoning_parser.py:2191', '0.5.19', 'sglang/srt/parser/reasoning_parser.py:2301'),
    'hunyuan': ('0.5.11', 'sglang/srt/parser/reasoning_parser.py:546', '0.5.10.post1', 'sglang/srt/parser/reasoning_parser.py:2282'),
    'inkling': ('0.5.16', 'sglang/srt/parser/reasoning_parser.py:1407', '0.5.15.post1', 'sglang/srt/parser/reasoning_parser.py:2305'),
    'interns1': ('0.5.7', 'sglang/srt/parser/reasoning_parser.py:317', '0.5.6.post2', 'sglang/srt/parser/reasoning_parser.py:2302'),
    'iquest_q1': ('0.5.21', 'sglang/srt/parser/reasoning_parser.py:2290', '0.5.20', 'sglang/srt/parser/reasoning_parser.py:2306'),
    'k2_horizon': ('0.5.20', 'sglang/srt/parser/reasoning_parser.py:2174', '0.5.19', 'sglang/srt/parser/reasoning_parser.py:2284'),
    'kimi': ('0.4.9', 'sglang/srt/reasoning_parser.py:192', '0.4.8.post1', 'sglang/srt/parser/reasoning_parser.py:2285'),
    'kimi_k2': ('0.5.5', 'sglang/srt/parser/reasoning_parser.py:294', '0.5.4.post3', 'sglang/srt/parser/reasoning_parser.py:2286'),
    'kimi_k3': ('0.5.17', 'sglang/srt/parser/reasoning_parser.py:1638', '0.5.16', 'sglang/srt/parser/reasoning_parser.py:2287'),
    'ling3': ('0.5.19', 'sglang/srt/parser/reasoning_parser.py:1938', '0.5.18', 'sglang/srt/parser/reasoning_parser.py:2281'),
    'mimo': ('0.5.10', 'sglang/srt/parser/reasoning_parser.py:498', '0.5.9', 'sglang/srt/parser/reasoning_parser.py:2288'),
    'minimax': ('0.5.4.post1', 'sglang/srt/parser/reasoning_parser.py:296', '0.5.4', 'sglang/srt/parser/reasoning_parser.py:2293'),
    'minimax-append-think': ('0.5.4.post1', 'sglang/srt/parser/reasoning_parser.py:297', '0.5.4', 'sglang/srt/parser/reasoning_parser.py:2294'),
    'minimax-m3': ('0.5.16', 'sglang/srt/parser/reasoning_parser.py:1400', '0.5.15.post1', 'sglang/srt/parser/reasoning_parser.py:2295'),
    'mistral': ('0.5.10', 'sglang/srt/parser/reasoning_parser.py:505', '0.5.9', 'sglang/srt/parser/reasoning_parser.py:2299'),
    'muse': ('0.5.18', 'sglang/srt/parser/reasoning_parser.py:1894', '0.5.17', 'sglang/srt/parser/reasoning_parser.py:2289'),
    'nanbeige': ('0.5.20', 'sglang/srt/parser/reasoning_parser.py:2186', '0.5.19', 'sglang/srt/parser/reasoning_parser.py:2296'),
    'nano_v3': ('0.5.7', 'sglang/srt/parser/reasoning_parser.py:316', '0.5.6.post2', None),
    'nemotron_3': ('0.5.10', 'sglang/srt/parser/reasoning_parser.py:506', '0.5.9', 'sglang/srt/parser/reasoning_parser.py:2300'),
    'poolside_v1': ('0.5.12', 'sglang/srt/parser/reasoning_parser.py:620', '0.5.11', 'sglang/srt/parser/reasoning_parser.py:2290'),
    'qwen3': ('0.4.6.post1', 'sglang/srt/reasoning_parser.py:156', '0.4.6', 'sglang/srt/parser/reasoning_parser.py:2291'),
    'qwen3-thinking': ('0.4.9.post4', 'sglang/srt/reasoning_parser.py:233', '0.4.9.post3', 'sglang/srt/parser/reasoning_parser.py:2292'),
    'response_template': ('0.5.23', 'sglang/srt/parser/reasoning_parser.py:2308', '0.5.22', 'sglang/srt/parser/reasoning_parser.py:2308'),
    'step3': ('0.4.10', 'sglang/srt/reasoning_parser.py:236', '0.4.9.post6', 'sglang/srt/parser/reasoning_parser.py:2297'),
    'step3p5': ('0.5.9', 'sglang/srt/parser/reasoning_parser.py:387', '0.5.8.post1', 'sglang/srt/parser/reasoning_parser.py:2298'),
}

REGISTRY = {
    ("vllm", "tool"): VLLM_TOOL,
    ("vllm", "reasoning"): VLLM_REASONING,
    ("sglang", "tool"): SGLANG_TOOL,
    ("sglang", "reasoning"): SGLANG_REASONING,
}
ENGINE_RELEASE = {"vllm": "0.33.0", "sglang": "0.5.23"}


def _all_specs():
    """Every (where, engine, job, spec) in the table, variants included."""
    for entry in fam.load_families():
        builds = [(entry["id"], fam.family(entry["id"]))]
        builds += [(f"{entry['id']}/{v['id']}", fam.family(entry["id"], v["id"])) for v in entry.get("variants") or []]
        for where, family in builds:
            for engine in fam.ENGINES:
                yield where, engine, "tool", family.tool_spec(engine)
                yield where, engine, "reasoning", family.reasoning_spec(engine)


SPECS = list(_all_specs())


# -- the table against the engines' registries ------------------------------------------------------------------
@pytest.mark.parametrize("where,engine,job,spec", SPECS, ids=[f"{w}-{e}-{j}" for w, e, j, _ in SPECS])
def test_every_parser_name_is_registered_by_that_engine(where, engine, job, spec):
    """A name under vllm must be a vLLM name and a name under sglang an SGLang name: never mixed."""
    registry = REGISTRY[(engine, job)]
    for name in [spec.name, *(n for n, _ in spec.earlier), *spec.also]:
        if name is None:
            continue
        assert name in registry, f"{where}: {engine} {job} parser {name!r} is not registered by any {engine} release"


@pytest.mark.parametrize("where,engine,job,spec", SPECS, ids=[f"{w}-{e}-{j}" for w, e, j, _ in SPECS])
def test_since_is_the_first_release_that_registers_the_name(where, engine, job, spec):
    registry = REGISTRY[(engine, job)]
    if spec.name is None:
        assert spec.why and spec.since is None
        return
    first, location, _before, latest = registry[spec.name]
    assert latest is not None, f"{where}: {spec.name!r} is no longer registered in {engine} {ENGINE_RELEASE[engine]}"
    if spec.since_why:  # a behaviour fix later than the name itself
        assert fam.version_at_least(spec.since, first), where
        assert spec.registered.startswith(f"{engine} {spec.since}: "), where
    else:
        assert spec.since == first, f"{where}: {spec.name} first registered in {engine} {first}"
        assert spec.registered.startswith(f"{engine} {first}: {location}"), where
    for name, since in spec.earlier:
        assert since == registry[name][0], f"{where}: earlier {name} first registered in {registry[name][0]}"


def test_names_differ_between_engines_where_the_engines_differ():
    """The pitfalls the table exists for: the same parser has another name in the other engine."""
    assert "deepseek_v3" in VLLM_TOOL and "deepseek_v3" not in SGLANG_TOOL
    assert "deepseekv3" in SGLANG_TOOL and "deepseekv3" not in VLLM_TOOL
    assert "openai" in VLLM_TOOL and "openai" not in SGLANG_TOOL and "gpt-oss" not in VLLM_TOOL
    assert "minimax_m2" in VLLM_TOOL and "minimax-m2" not in VLLM_TOOL and "minimax-m2" in SGLANG_TOOL
    assert "glm47" in VLLM_REASONING and "glm47" not in SGLANG_REASONING
    for family in fam.families():
        for job in ("tool", "reasoning"):
            name = getattr(family, f"{job}_parser")("vllm")
            other = getattr(family, f"{job}_parser")("sglang")
            if name is not None and name not in REGISTRY[("sglang", job)]:
                assert name != other, family.id


# -- structure ----------------------------------------------------------------------------------------------
def test_table_loads_and_every_entry_has_sources():
    loaded = fam.families()
    assert len(loaded) >= 28
    assert len({f.id for f in loaded}) == len(loaded)
    for family in loaded:
        assert set(family.engines) == {"vllm", "sglang"}
        assert family.sources and all(family.sources.values()), family.id
        for engine in fam.ENGINES:
            assert family.source(engine) != "families.yaml", family.id


def test_table_covers_the_families_of_the_task():
    ids = {f.id for f in fam.families()}
    assert {"qwen3-coder", "qwen3.5", "qwen3.6", "qwen3", "qwq", "qwen2.5", "glm-4.5", "glm-4.6", "glm-4.7", "glm-5",
            "deepseek-v3", "deepseek-v3.1", "deepseek-v3.2", "deepseek-r1", "deepseek-v4", "kimi-k2", "kimi-k2.5",
            "kimi-k3", "kimi-linear", "gpt-oss", "minimax-m2", "llama-3", "llama-4", "mistral", "gemma-3", "gemma-4",
            "nemotron-3", "mimo"} <= ids


def _write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "families.yaml"
    path.write_text(body, encoding="utf-8")
    return str(path)


# A scenario table (not real data): one valid family to be broken one field at a time.
SCENARIO = """\
matching:
  tiers:
    - {by: names, fact: model.name, op: matches, rank: longest_match, says: "name {matched!r} in {name!r}"}
    - {by: model_types, fact: model.model_type, op: eq, says: "config.json:model_type {value}"}
  variants: {by: names, fact: model.name, op: matches}
  alternatives: {by: also_model_types, fact: model.model_type, op: eq}
families:
  - id: scenario
    title: Scenario family (test data, not a real model)
    match: {names: ['scenario-model']}
    reasoning: false
    vllm:
      tool: {name: hermes, since: "0.6.0", registered: "vllm 0.6.0: x.py:1"}
      reasoning: {name: null, why: "not a reasoning model"}
    sglang:
      tool: {name: qwen25, since: "0.4.2", registered: "sglang 0.4.2: y.py:2"}
      reasoning: {name: null, why: "not a reasoning model"}
    sources:
      vllm: [scenario]
      sglang: [scenario]
"""


def test_scenario_table_loads(tmp_path):
    path = _write(tmp_path, SCENARIO)
    found = fam.match_family(architectures=None, model_type=None, name="org/Scenario-Model-7B", path=path)
    assert found is not None and found.id == "scenario" and found.tool_parser("sglang") == "qwen25"


@pytest.mark.parametrize("broken,field", [
    (SCENARIO.replace("    sglang:\n      tool", "    tensorrt:\n      tool"), "tensorrt"),
    (SCENARIO.replace('      reasoning: {name: null, why: "not a reasoning model"}\n    sglang',
                      "      reasoning: {name: null}\n    sglang"), "vllm.reasoning.why"),
    (SCENARIO.replace('since: "0.6.0", ', ""), "vllm.tool.since"),
    (SCENARIO.replace(', registered: "vllm 0.6.0: x.py:1"', ""), "vllm.tool.registered"),
    (SCENARIO.replace("      vllm: [scenario]\n", ""), "sources.vllm"),
    (SCENARIO.replace("['scenario-model']", "['(unclosed']"), "match.names"),
    (SCENARIO.replace("reasoning: false", "reasoning: maybe"), "reasoning"),
    (SCENARIO + SCENARIO.split("families:\n", 1)[1], "id"),
    ("families: {}\n", "families"),
    (SCENARIO.replace("rank: longest_match", "rank: longest"), "matching.tiers[0]"),
    (SCENARIO.replace("by: model_types", "by: model_type"), "matching.tiers[1]"),
    (SCENARIO.split("families:\n", 1)[1].join(["families:\n", ""]), "matching.tiers"),
    ("families: [\n", "not valid YAML"),
])
def test_broken_table_names_file_and_field(tmp_path, broken, field):
    with pytest.raises(InputError) as err:
        fam.load_families(_write(tmp_path, broken))
    message = str(err.value)
    assert message.startswith("families.yaml") and field in message and "\n" not in message


# -- matching the real configs ----------------------------------------------------------------------------------
# file -> (family by repo name, family by config.json alone). Config-only matches land on the family that owns the
# model_type/architecture (deepseek_v3 -> deepseek-v3 for R1 and V3.1 too); None: no family in the table.
EXPECTED = {
    "MiniMaxAI__MiniMax-M2.7.json": ("minimax-m2", "minimax-m2"),
    "Qwen__Qwen2.5-72B.json": ("qwen2.5", "qwen2.5"),
    "Qwen__Qwen2.5-7B.json": ("qwen2.5", "qwen2.5"),
    "Qwen__Qwen3-235B-A22B.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-30B-A3B.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-32B.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-8B.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-Coder-480B-A35B-Instruct.json": ("qwen3-coder", "qwen3"),
    "Qwen__Qwen3-Next-80B-A3B-Thinking.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-VL-235B-A22B-Instruct.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-VL-30B-A3B-Instruct.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3-VL-8B-Instruct.json": ("qwen3", "qwen3"),
    "Qwen__Qwen3.5-122B-A10B.json": ("qwen3.5", "qwen3.5"),
    "Qwen__Qwen3.5-27B.json": ("qwen3.5", "qwen3.5"),
    "Qwen__Qwen3.5-35B-A3B.json": ("qwen3.5", "qwen3.5"),
    "Qwen__Qwen3.5-397B-A17B.json": ("qwen3.5", "qwen3.5"),
    "Qwen__Qwen3.6-35B-A3B.json": ("qwen3.6", "qwen3.5"),
    "XiaomiMiMo__MiMo-V2-Flash.json": ("mimo", "mimo"),
    "ai21labs__Jamba-v0.1.json": (None, None),
    "deepseek-ai__DeepSeek-R1.json": ("deepseek-r1", "deepseek-v3"),
    "deepseek-ai__DeepSeek-V2-Lite.json": (None, None),
    "deepseek-ai__DeepSeek-V2.json": (None, None),
    "deepseek-ai__DeepSeek-V3.1.json": ("deepseek-v3.1", "deepseek-v3"),
    "deepseek-ai__DeepSeek-V3.2-Exp.reconstructed.json": ("deepseek-v3.2", "deepseek-v3.2"),
    "deepseek-ai__DeepSeek-V3.2.json": ("deepseek-v3.2", "deepseek-v3.2"),
    "deepseek-ai__DeepSeek-V3.json": ("deepseek-v3", "deepseek-v3"),
    "deepseek-ai__DeepSeek-V4-Flash.json": ("deepseek-v4", "deepseek-v4"),
    "deepseek-ai__DeepSeek-V4-Pro.json": ("deepseek-v4", "deepseek-v4"),
    "google__gemma-3-27b-it.json": ("gemma-3", "gemma-3"),
    "google__gemma-4-26B-A4B.json": ("gemma-4", "gemma-4"),
    "meta-llama__Llama-2-7b-hf.json": ("llama-2", "llama-3"),
    "meta-llama__Llama-3.3-70B-Instruct.json": ("llama-3", "llama-3"),
    "meta-llama__Llama-4-Maverick-17B-128E-Instruct.json": ("llama-4", "llama-4"),
    "meta-llama__Llama-4-Scout-17B-16E-Instruct.json": ("llama-4", "llama-4"),
    "meta-llama__Meta-Llama-3.1-405B.json": ("llama-3", "llama-3"),
    "meta-llama__Meta-Llama-3.1-70B.json": ("llama-3", "llama-3"),
    "meta-llama__Meta-Llama-3.1-8B.json": ("llama-3", "llama-3"),
    "mistralai__Mistral-7B-v0.1.json": ("mistral", "mistral"),
    "mistralai__Mixtral-8x22B-v0.1.json": ("mistral", "mistral"),
    "mistralai__Mixtral-8x7B-v0.1.json": ("mistral", "mistral"),
    "moonshotai__Kimi-K2-Instruct.json": ("kimi-k2", "kimi-k2"),
    "moonshotai__Kimi-K2.5.json": ("kimi-k2.5", "kimi-k2.5"),
    "moonshotai__Kimi-K3.json": ("kimi-k3", "kimi-k3"),
    "moonshotai__Kimi-Linear-48B-A3B-Instruct.reconstructed.json": ("kimi-linear", "kimi-linear"),
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json": ("llama-nemotron", "llama-nemotron"),
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": ("nemotron-3", "nemotron-3"),
    "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4.json": ("nemotron-3", "nemotron-3"),
    "nvidia__Nemotron-H-56B-Base-8K.json": ("nemotron-h", "nemotron-3"),
    "openai__gpt-oss-120b.json": ("gpt-oss", "gpt-oss"),
    "openai__gpt-oss-20b.json": ("gpt-oss", "gpt-oss"),
    "tiiuae__falcon-7b.json": (None, None),
    "zai-org__GLM-4.5-Air.json": ("glm-4.5", "glm-4.5"),
    "zai-org__GLM-4.5.json": ("glm-4.5", "glm-4.5"),
    "zai-org__GLM-5.1.json": ("glm-5", "glm-5"),
    "zai-org__GLM-5.2.json": ("glm-5", "glm-5"),
    "zai-org__GLM-5.json": ("glm-5", "glm-5"),
}


def _repo_id(file_name: str) -> str:
    """``ORG__NAME.json`` (and ``.reconstructed.json``) -> ``ORG/NAME``."""
    stem = file_name.removesuffix(".json").removesuffix(".reconstructed")
    org, _, name = stem.partition("__")
    return f"{org}/{name}"


def _config(file_name: str) -> dict:
    # json accepts the bare Infinity some real configs carry (Nemotron-H).
    return json.loads((SHARED_FIXTURES / "configs" / file_name).read_text(encoding="utf-8"))


@requires_shared
def test_every_real_config_is_listed():
    on_disk = {p.name for p in (SHARED_FIXTURES / "configs").glob("*.json")}
    assert on_disk == set(EXPECTED), "add the new fixture to EXPECTED with the family it must match"


@requires_shared
@pytest.mark.parametrize("file_name", sorted(EXPECTED))
def test_real_config_matches_its_family(file_name):
    by_name, by_config = EXPECTED[file_name]
    config = _config(file_name)
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    arch, model_type = config.get("architectures"), config.get("model_type")

    named = fam.match_family(architectures=arch, model_type=model_type, name=_repo_id(file_name))
    assert (named.id if named else None) == by_name
    if named is not None:
        assert named.matched_by.startswith("name "), named.matched_by

    alone = fam.match_family(architectures=arch, model_type=model_type, name=None)
    assert (alone.id if alone else None) == by_config
    if alone is not None:
        assert alone.matched_by.startswith("config.json:")
    # docs/facts.md: model.model_type is the text config's when nested; architectures still decide first.
    if text.get("model_type"):
        nested = fam.match_family(architectures=arch, model_type=text["model_type"], name=None)
        assert (nested.id if nested else None) == by_config


@requires_shared
def test_config_only_match_says_which_siblings_it_cannot_exclude():
    config = _config("zai-org__GLM-4.5.json")
    found = fam.match_family(architectures=config["architectures"], model_type=config["model_type"], name=None)
    assert found.id == "glm-4.5" and set(found.alternatives) == {"glm-4.6", "glm-4.7"}
    assert "repo name" in found.matched_by


# -- the task's examples and the known pitfalls -------------------------------------------------------------------
@pytest.mark.parametrize("name,family_id,variant", [
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "qwen3-coder", None),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder", None),
    ("Qwen/Qwen3-8B", "qwen3", None),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3", "instruct"),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen3", "thinking"),
    ("Qwen/Qwen3-8B-Base", "qwen3", "base"),
    ("Qwen/QwQ-32B", "qwq", None),
    ("nvidia/GLM-5.2-NVFP4", "glm-5", None),
    ("zai-org/GLM-4.6-FP8", "glm-4.6", None),
    ("zai-org/GLM-4.7-Flash", "glm-4.7", None),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3", None),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3.1", None),
    ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-v3.2", "exp"),
    ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1", None),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1", "distill"),
    ("deepseek-ai/DeepSeek-V4.1-Pro", "deepseek-v4", "v4.1"),
    ("moonshotai/Kimi-K2-Thinking", "kimi-k2", "thinking"),
    ("moonshotai/Kimi-K2.6", "kimi-k2.5", None),
    ("mistralai/Magistral-Small-2509", "mistral", "reasoning"),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nemotron-h", "nano-2"),
    ("/root/.cache/huggingface/hub/models--Qwen--Qwen3.6-35B-A3B/snapshots/" + "0" * 40, "qwen3.6", None),
    ("/data/models/glm-4.7-fp8/", "glm-4.7", None),
    ("C:\\models\\gpt-oss-20b", "gpt-oss", None),
])
def test_match_by_name(name, family_id, variant):
    found = fam.match_family(architectures=None, model_type=None, name=name)
    assert found is not None and (found.id, found.variant) == (family_id, variant)


def test_name_beats_config_and_unknown_is_none():
    coder = fam.match_family(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe",
                             name="Qwen/Qwen3-Coder-480B-A35B-Instruct")
    assert coder.id == "qwen3-coder"
    assert fam.match_family(architectures=None, model_type=None, name=None) is None
    assert fam.match_family(architectures=["FalconForCausalLM"], model_type="falcon", name="tiiuae/falcon-7b") is None
    assert fam.match_family(architectures=[], model_type="", name="") is None


def test_known_pitfalls():
    coder = fam.family("qwen3-coder")
    assert coder.tool_parser("vllm") == "qwen3_coder" and coder.tool_parser("sglang") == "qwen3_coder"
    assert "hermes" not in coder.tool_spec("vllm").accepted()
    qwen3 = fam.family("qwen3")
    assert (qwen3.tool_parser("vllm"), qwen3.reasoning_parser("vllm")) == ("hermes", "qwen3")
    assert (qwen3.tool_parser("sglang"), qwen3.reasoning_parser("sglang")) == ("qwen25", "qwen3")
    assert fam.family("deepseek-v3.1").tool_parser("vllm") == "deepseek_v31"
    assert fam.family("deepseek-v3").tool_parser("sglang") == "deepseekv3"
    oss = fam.family("gpt-oss")
    assert (oss.tool_parser("vllm"), oss.tool_parser("sglang")) == ("openai", "gpt-oss")
    for fid in ("glm-4.5", "glm-4.6"):
        assert fam.family(fid).tool_parser("vllm") == "glm45" == fam.family(fid).tool_parser("sglang")
    for fid in ("glm-4.7", "glm-5"):
        glm = fam.family(fid)
        assert (glm.tool_parser("vllm"), glm.reasoning_parser("vllm")) == ("glm47", "glm45")
        assert (glm.tool_parser("sglang"), glm.reasoning_parser("sglang")) == ("glm47", "glm45")
    mm = fam.family("minimax-m2")
    assert (mm.tool_parser("vllm"), mm.tool_parser("sglang")) == ("minimax_m2", "minimax-m2")


def test_reasoning_and_thinking_switches():
    assert fam.family("qwen3").thinking_toggle == "enable_thinking" and fam.family("qwen3").thinking_default
    v31 = fam.family("deepseek-v3.1")
    assert v31.reasoning and v31.thinking_toggle == "thinking" and v31.thinking_default is False
    instruct = fam.family("qwen3", "instruct")
    assert not instruct.reasoning and instruct.reasoning_parser("vllm") is None and instruct.reasoning_spec("vllm").why
    assert not fam.family("qwen3-coder").reasoning
    assert fam.family("gpt-oss").needs_auto_tool_choice and not fam.family("gemma-3").needs_auto_tool_choice


# -- expected facts ---------------------------------------------------------------------------------------------
def test_expected_facts_for_the_seed_glm_command():
    found = fam.match_family(architectures=["GlmMoeDsaForCausalLM"], model_type="glm_moe_dsa",
                             name="nvidia/GLM-5.2-NVFP4")
    facts = fam.expected_facts(found, "sglang", "0.5.23")
    assert facts.get("model.family") == "glm-5"
    assert "GLM-5.2" in facts.fact("model.family").source
    assert facts.get("expect.tool_parser") == "glm47" and facts.get("expect.reasoning_parser") == "glm45"
    assert facts.get("expect.tool_parser_since") == "0.5.7"
    assert facts.fact("expect.tool_parser_since").source.startswith("sglang wheel registry: sglang 0.5.7: ")
    assert "sgl-cookbook" in facts.fact("expect.tool_parser").source
    assert "expect.auto_tool_choice" not in facts  # SGLang has no such flag
    vllm = fam.expected_facts(found, "vllm", None)
    assert vllm.get("expect.auto_tool_choice") is True
    assert vllm.get("expect.reasoning_parser_accepted") == ["glm45", "glm4_moe", "glm47"]


def test_expected_facts_follow_the_engine_version():
    glm = fam.family("glm-4.5")
    old = fam.expected_facts(glm, "vllm", "0.10.0")
    assert (old.get("expect.tool_parser"), old.get("expect.tool_parser_since")) == ("glm4_moe", "0.10.0")
    assert old.get("expect.tool_parser_accepted") == ["glm4_moe"]
    new = fam.expected_facts(glm, "vllm", "v0.13.0+cu129")
    assert (new.get("expect.tool_parser"), new.get("expect.tool_parser_accepted")) == ("glm45", ["glm45"])
    nemo = fam.family("nemotron-3")
    assert fam.expected_facts(nemo, "sglang", "0.5.8").get("expect.reasoning_parser") == "nano_v3"
    assert fam.expected_facts(nemo, "sglang", "0.5.10").get("expect.reasoning_parser") == "nemotron_3"
    # Older than any name: the current name stays expected and `since` is the upgrade target.
    too_old = fam.expected_facts(fam.family("qwen3.5"), "vllm", "0.16.0")
    assert (too_old.get("expect.reasoning_parser"), too_old.get("expect.reasoning_parser_since")) == ("qwen3", "0.17.0")
    assert "<think>" in too_old.fact("expect.reasoning_parser_since").source
    # A tag that is not a version (nightly, latest) means "unknown": current names.
    assert fam.expected_facts(glm, "vllm", "nightly").get("expect.tool_parser") == "glm45"


def test_expected_facts_without_a_parser_say_why():
    facts = fam.expected_facts(fam.family("qwen3-coder"), "vllm", "0.33.0")
    assert facts.get("expect.reasoning_parser") is None and "expect.reasoning_parser" in facts
    assert "non-thinking" in facts.get("expect.reasoning_parser_why_none")
    assert facts.get("expect.reasoning_model") is False and facts.get("expect.thinking_toggle") is None


def test_unknown_engine_is_an_input_error():
    with pytest.raises(InputError, match="engine: 'trtllm'"):
        fam.expected_facts(fam.family("qwen3"), "trtllm", None)
    with pytest.raises(InputError, match="engine"):
        fam.family("qwen3").tool_parser("tgi")
    with pytest.raises(InputError, match="no family"):
        fam.family("nonexistent")


# -- versions -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version,since,expected", [
    ("0.13.0", "0.13.0", True),
    ("0.13", "0.13.0", True),
    ("0.10.1.1", "0.10.1", True),
    ("0.10.1", "0.10.1.1", False),
    ("0.5.1.post3", "0.5.1", True),
    ("0.5.1", "0.5.1.post3", False),
    ("0.4.9.post4", "0.4.9.post5", False),
    ("0.11.0rc1", "0.11.0", False),
    ("0.11.0rc1", "0.10.2", True),
    ("0.11.0.dev12+g1234abc", "0.11.0", False),
    ("0.11.1.dev3", "0.11.0", True),
    ("v0.33.0", "0.30.0", True),
    ("0.13.0+cu129", "0.13.0", True),
    ("0.9.2", "0.10.0", False),
    ("1.0.0", "0.33.0", True),
])
def test_version_at_least(version, since, expected):
    assert fam.version_at_least(version, since) is expected


@pytest.mark.parametrize("bad", ["latest", "nightly", "", "v", "0.13.x"])
def test_version_at_least_rejects_tags(bad):
    with pytest.raises(InputError, match="engine version"):
        fam.version_at_least(bad, "0.13.0")


@given(st.lists(st.integers(0, 40), min_size=1, max_size=4), st.lists(st.integers(0, 40), min_size=1, max_size=4))
def test_version_order_matches_release_tuple_order(a, b):
    def norm(t):
        t = list(t)
        while len(t) > 1 and t[-1] == 0:
            t.pop()
        return tuple(t)
    va, vb = ".".join(map(str, a)), ".".join(map(str, b))
    assert fam.version_at_least(va, vb) is (norm(a) >= norm(b))


# -- speed and docs ---------------------------------------------------------------------------------------------
def test_import_is_light():
    """The lint/check start-up path imports this module: YAML is read only when the table is used."""
    code = "import sys, doctor.engines.families; print('yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_docs_render_every_family_with_its_parsers():
    text = (ROOT / "docs" / "families.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].split("<br>")[0].strip(): line for line in text.splitlines() if line.startswith("| `")}
    for family in fam.families():
        row = rows.get(f"`{family.id}`")
        assert row is not None, f"docs/families.md has no row for {family.id}"
        for engine in fam.ENGINES:
            for name in (family.tool_parser(engine), family.reasoning_parser(engine)):
                if name:
                    assert f"`{name}`" in row, f"{family.id}: {name} missing from its docs row"
            for since in (family.tool_parser_since(engine), family.reasoning_parser_since(engine)):
                if since:
                    assert since in row, f"{family.id}: since {since} missing from its docs row"


@pytest.mark.parametrize("architectures,model_type,name", [
    ("Glm4MoeForCausalLM", None, None),          # a bare string instead of a list
    ([None, 7, "Glm4MoeForCausalLM"], None, None),
    ({"a": 1}, ["glm4_moe"], 42),               # wrong types everywhere: no match, no crash
])
def test_malformed_config_values_never_crash(architectures, model_type, name):
    found = fam.match_family(architectures=architectures, model_type=model_type, name=name)
    assert found is None or found.id == "glm-4.5"


def test_matched_by_redacts_a_credential_in_the_name():
    found = fam.match_family(architectures=None, model_type=None,
                             name="https://user:hf_abcdefghijklmnopqrstuvwxyz@host/models/Qwen3-8B")
    assert found.id == "qwen3" and "hf_abc" not in found.matched_by and "***" in found.matched_by


# -- precedence is data: the table's matching tiers, run by the playbooks' evaluator --------------------------------
def _reordered(tmp_path: Path, old: str, new: str) -> str:
    text = fam.DATA_FILE.read_text(encoding="utf-8")
    assert old in text, f"families.yaml no longer has {old!r}"
    return _write(tmp_path, text.replace(old, new, 1))


def test_the_longest_name_match_wins_because_the_tier_says_so(tmp_path):
    """'Llama-3.1-Nemotron' is matched by llama-3 (earlier in the file) and by llama-nemotron (longer): the names
    tier's rank decides, and with rank `first` the file order would."""
    name = "nvidia/Llama-3.1-Nemotron-Nano-8B-v1"
    shipped = fam.match_family(architectures=None, model_type=None, name=name)
    assert shipped is not None and shipped.id == "llama-nemotron"
    assert shipped.matched_by == f"name 'Llama-3.1-Nemotron' in '{name}'"
    first = _reordered(tmp_path, "rank: longest_match", "rank: first")
    assert fam.match_family(architectures=None, model_type=None, name=name, path=first).id == "llama-3"


def test_the_tiers_order_is_the_precedence(tmp_path):
    """The repo name outranks model_type because its tier comes first: put model_types first and Qwen3-Coder
    (model_type qwen3_moe, claimed by qwen3) is generic Qwen3, with the siblings a config-only match lists."""
    text = fam.DATA_FILE.read_text(encoding="utf-8")
    names_tier = next(line for line in text.splitlines() if line.strip().startswith("- {by: names,"))
    start, end = text.index("  tiers:\n") + len("  tiers:\n"), text.index("  variants:")
    tiers = text[start:end].replace(names_tier + "\n", "") + names_tier + "\n"
    path = _write(tmp_path, text[:start] + tiers + text[end:])
    args = {"architectures": None, "model_type": "qwen3_moe", "name": "Qwen/Qwen3-Coder-480B-A35B-Instruct"}
    assert fam.match_family(**args).id == "qwen3-coder"
    found = fam.match_family(**args, path=path)
    assert found.id == "qwen3" and found.matched_by.startswith("config.json:model_type qwen3_moe (shared with")
    assert "qwen3-coder" in found.alternatives


def test_best_holding_ranks_true_conditions_and_skips_the_rest():
    from doctor.facts import Facts
    from doctor.playbook.conditions import best_holding

    facts = Facts()
    facts.set("model.name", "Qwen3-Coder-480B", "test")
    conds = [{"fact": "model.name", "op": "matches", "value": "(?i)qwen3"}, None,
             {"any": [{"fact": "model.name", "op": "matches", "value": "(?i)nope"},
                      {"fact": "model.name", "op": "matches", "value": "(?i)qwen3-coder"}]},
             {"fact": "model.model_type", "op": "eq", "value": "qwen3_moe"}]  # unknown fact: never holds
    assert best_holding(conds, facts, "first")[0] == 0
    index, outcome = best_holding(conds, facts, "longest_match")
    assert (index, outcome.matched) == (2, "Qwen3-Coder")
    assert best_holding(conds[3:], facts, "first") is None
