# gospan as a container image: a build stage with the Makefile's compilers and -dev packages,
# and a runtime stage holding build/gospan and the shared libraries it links against.
#
#   docker build -t gospan .
#   docker run --rm --pid=host --uts=host --read-only --cap-drop ALL --cap-add SYS_ADMIN \
#       --cap-add SYS_PTRACE --cap-add DAC_READ_SEARCH \
#       -e OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 gospan --exe /app/my-service
#
# docker-compose.yml and examples/kubernetes/README.md say what each privilege is for.
# tests/e2e/test_deploy.py replays this file's build stage on the test machine (same Debian
# release, same packages) and checks the runtime stage's package list against `ldd`.

FROM debian:bookworm AS build

# Only what `make build/gospan` uses; the Makefile's DEB_PKGS also lists test tools.
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		bpftool clang gcc libbpf-dev libc6-dev libcapstone-dev libcjson-dev \
		libcurl4-openssl-dev libdw-dev libelf-dev libprotobuf-c-dev llvm make pkg-config \
		protobuf-c-compiler zlib1g-dev \
	&& rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY Makefile ./
COPY bpf/ bpf/
COPY exporter/ exporter/
COPY proto/ proto/
COPY offsets/*_offsets.json offsets/
# The BPF objects and the offset tables are embedded: build/gospan is the one file to ship.
RUN make -j"$(nproc)" build/gospan && ./build/gospan --version

FROM debian:bookworm-slim

# The libraries build/gospan links against (readelf -d: NEEDED) by their Debian packages; apt
# brings what they need in turn. ca-certificates: libcurl verifies https:// collectors with it.
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		ca-certificates libbpf1 libcapstone4 libcjson1 libcurl4 libdw1 libelf1 \
		libprotobuf-c1 zlib1g \
	&& rm -rf /var/lib/apt/lists/*

COPY --from=build /src/build/gospan /usr/local/bin/gospan

# No USER: running as anything but root is not possible in practice. gospan loads BPF programs
# and attaches uprobes to other processes, which takes CAP_SYS_ADMIN (uprobes; it also covers the
# CAP_NET_ADMIN check of the socket-layer writer of trace context), CAP_BPF, CAP_PERFMON and
# CAP_SYS_PTRACE in the initial user namespace, plus CAP_DAC_READ_SEARCH for targets of another
# user; a non-root user holds them only through file capabilities on the binary, and would then
# be as powerful as root is here. The container's privileges are whatever `--cap-add` (or the
# pod's securityContext) grants. For outgoing trace context the container also needs the host's
# cgroup namespace (`--cgroupns=host`), whose cgroup v2 hierarchy it then sees at /sys/fs/cgroup:
# see docker-compose.yml.
# No CMD: the target comes as arguments (--exe PATH, as docker-compose.yml gives it) or in the
# environment (OTEL_GO_AUTO_TARGET_EXE, as the Kubernetes DaemonSet gives it, with no args). A
# CMD would be gospan's arguments in the second case too: a default such as --help made every
# DaemonSet pod print the help and exit.
ENTRYPOINT ["/usr/local/bin/gospan"]
