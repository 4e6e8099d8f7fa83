"""GPU knowledge: the catalog (gpus.yaml), ``--gpu`` parsing and the kernel gating data (kernels.yaml)."""
