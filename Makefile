# Sentinel: the two commands of the README, and the pieces they are made of.
#   make demo   set everything up, then serve the sample recording live (SSE and REST on localhost:8080)
#   make test   set everything up, then pass the tests
# Both work on a fresh Debian 12 machine with Swift installed; apt packages are installed when missing.

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := libopencv-dev opencv-data libsqlite3-dev python3-h5py python3-onnx python3-numpy python3-pip python3-jsonschema \
	python3-prometheus-client python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good gstreamer1.0-plugins-bad python3-opencv \
	libmosquitto-dev mosquitto
SCENE := Recordings/showroom.yml
SAMPLES := Recordings/out/showroom-640x480.mp4 Recordings/out/showroom-1280x720.mp4
DEBUG := .build/debug/sentinel
RELEASE := .build/release/sentinel

.PHONY: demo test lint bench eval setup deps models recordings debug release clean

demo: release
	@$(MAKE) --no-print-directory setup SENTINEL=$(RELEASE)
	$(RELEASE) run Pipelines/showroom.yml --loop

test: debug
	@$(MAKE) --no-print-directory setup SENTINEL=$(DEBUG)
	swift test --skip-build

# The project's .swift-format, strictly: CI fails on any finding ('swift format -i -r Sources Tests Package.swift' fixes most).
lint:
	swift format lint --strict -r Sources Tests Package.swift

bench: release
	@$(MAKE) --no-print-directory setup SENTINEL=$(RELEASE)
	$(RELEASE) bench detect
	$(RELEASE) bench pipeline
	$(RELEASE) bench sse
	$(RELEASE) bench mqtt
	$(RELEASE) bench fleet

eval: release
	@$(MAKE) --no-print-directory setup SENTINEL=$(RELEASE)
	$(RELEASE) eval detections $(SAMPLES) $(wildcard ../shared/media/short_hamilton_clip.mp4)

# Models and sample recordings, made with whichever build SENTINEL names.
setup: models recordings

models:
	$(SENTINEL) models setup

recordings: $(SAMPLES)

$(SAMPLES) &: $(SCENE) Recordings/photos.sha256
	Recordings/fetch-photos.sh
	$(SENTINEL) synth $(SCENE)

debug: deps
	swift build --build-tests

release: deps
	swift build -c release

# Debian packages, installed only when one is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

clean:
	rm -rf .build Models/cache Recordings/out Recordings/faces
