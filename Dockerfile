# llmdoctor's command line as a container: `serve` behind Alertmanager, the nightly `report`, or any one-off
# command (`docker run --rm IMAGE lint "vllm serve ..."`). No GPU libraries: llmdoctor reads GPUs through NVML
# (nvidia-ml-py, loaded only when a driver is there) and servers over HTTP, so a slim Python image is enough.
#
#   docker build -t llmdoctor .
#   docker run --rm llmdoctor lint "vllm serve Qwen/Qwen3-8B -tp 2"
#   docker run --rm -p 9095:9095 llmdoctor serve --listen 0.0.0.0:9095 --out-dir /tmp/alerts
FROM python:3.11-slim

# the package and its dependencies only: no build tools, no cache, no source left in the image
COPY pyproject.toml README.md /src/
COPY doctor /src/doctor
COPY playbooks /src/playbooks
RUN python -m pip install --no-cache-dir /src && rm -rf /src

# never root: a fixed, unprivileged user (Kubernetes' runAsNonRoot can check the numeric id)
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin llmdoctor
USER 10001:10001
WORKDIR /home/llmdoctor
ENV HF_HUB_DISABLE_TELEMETRY=1 PYTHONUNBUFFERED=1

EXPOSE 9095
ENTRYPOINT ["llmdoctor"]
CMD ["--help"]
