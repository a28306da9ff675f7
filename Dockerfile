# syntax=docker/dockerfile:1
# Build: docker build -t ragmeta .     Run: docker run -p 8000:8000 -v ragmeta-data:/data ragmeta
# Stage 1 builds the virtual environment from the lock file; stage 2 is the slim, non-root runtime.
FROM python:3.11-slim-bookworm AS build
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.lock /tmp/requirements.lock
# torch==2.13.0+cpu comes from PyTorch's CPU index; everything else from PyPI.
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -r /tmp/requirements.lock

FROM python:3.11-slim-bookworm
# WordNet for METEOR's English synonym module, from Debian's packages (never downloaded at run time).
RUN apt-get update && apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 ragmeta && mkdir /data && chown ragmeta /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# The source tree is used in place (the migrations live in /app/alembic, found next to services/).
COPY alembic.ini pyproject.toml ./
COPY alembic ./alembic
COPY app ./app
COPY services ./services
COPY ragmeta ./ragmeta
COPY data ./data
# The service's bytecode written now: the non-root user cannot write it into /app at run time, and every
# process would compile every module at each start.
RUN /opt/venv/bin/python -m compileall -q app services
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    RAGMETA_DATABASE_URL=sqlite:////data/ragmeta.db \
    RAGMETA_DATA_DIR=/data \
    RAGMETA_HOST=0.0.0.0
USER ragmeta
# Compile the statistics' numba kernels into the user's cache now, not in the first report.
RUN python -c "from services import stats_kernels; stats_kernels.warm_up()"
EXPOSE 8000
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')" || exit 1
CMD ["python", "-m", "app.cli", "run"]
