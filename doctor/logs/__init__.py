"""Engine server logs as evidence: read a (possibly huge) vLLM or SGLang log within a cap, turn it into
``log.*`` facts, and name the launch-failure causes whose signatures it carries (playbooks/causes/<id>.yaml)."""
