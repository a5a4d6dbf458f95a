// Frame sources: recorded files, V4L2 devices and network streams, all through cv::VideoCapture.
#include "guard.hpp"

#include <opencv2/videoio.hpp>

using snl::guarded;
using snl::require;

struct snl_capture {
    cv::VideoCapture capture;
};

namespace {

/// Network streams must not hang the process: bounded open and read waits (milliseconds).
const std::vector<int> kStreamTimeouts = {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, 10000, cv::CAP_PROP_READ_TIMEOUT_MSEC, 5000};

snl_status open(snl_capture **out, snl_error *error, const std::string &what, const std::function<void(cv::VideoCapture &)> &body) {
    return guarded(error, SNL_ERR_OPEN, [&] {
        auto handle = std::make_unique<snl_capture>();
        body(handle->capture);
        require(handle->capture.isOpened(), SNL_ERR_OPEN, "cannot open " + what);
        *out = handle.release();
    });
}

}  // namespace

extern "C" {

snl_status snl_capture_open_file(const char *path, snl_capture **out, snl_error *error) {
    return open(out, error, std::string("video file ") + path,
                [&](cv::VideoCapture &c) { c.open(path, cv::CAP_FFMPEG); });
}

snl_status snl_capture_open_device(int32_t index, int32_t width, int32_t height, snl_capture **out,
                                   snl_error *error) {
    return open(out, error, "camera /dev/video" + std::to_string(index), [&](cv::VideoCapture &c) {
        c.open(index, cv::CAP_V4L2);
        if (c.isOpened() && width > 0 && height > 0) {
            c.set(cv::CAP_PROP_FRAME_WIDTH, width);
            c.set(cv::CAP_PROP_FRAME_HEIGHT, height);
        }
    });
}

snl_status snl_capture_open_url(const char *url, snl_capture **out, snl_error *error) {
    return open(out, error, std::string("stream ") + url,
                [&](cv::VideoCapture &c) { c.open(url, cv::CAP_FFMPEG, kStreamTimeouts); });
}

snl_status snl_capture_info_get(const snl_capture *capture, snl_capture_info *info, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(capture != nullptr && info != nullptr, SNL_ERR_ARGUMENT, "null capture or info");
        const cv::VideoCapture &c = capture->capture;
        info->fps = c.get(cv::CAP_PROP_FPS);
        double count = c.get(cv::CAP_PROP_FRAME_COUNT);
        info->frame_count = count > 0 ? int64_t(count) : -1;
        info->width = int32_t(c.get(cv::CAP_PROP_FRAME_WIDTH));
        info->height = int32_t(c.get(cv::CAP_PROP_FRAME_HEIGHT));
        info->fourcc = uint32_t(int64_t(c.get(cv::CAP_PROP_FOURCC)));
    });
}

snl_status snl_capture_read(snl_capture *capture, snl_image **out, double *position_ms, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(capture != nullptr, SNL_ERR_ARGUMENT, "null capture");
        *out = nullptr;
        cv::Mat frame;
        if (!capture->capture.read(frame) || frame.empty()) return;
        *position_ms = capture->capture.get(cv::CAP_PROP_POS_MSEC);
        *out = new snl_image{frame};
    });
}

snl_status snl_capture_seek(snl_capture *capture, double position_ms, int64_t *frame_index, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(capture != nullptr && frame_index != nullptr, SNL_ERR_ARGUMENT, "null capture or frame index");
        require(capture->capture.set(cv::CAP_PROP_POS_MSEC, position_ms), SNL_ERR_OPENCV, "the capture cannot seek");
        *frame_index = int64_t(capture->capture.get(cv::CAP_PROP_POS_FRAMES));
    });
}

void snl_capture_destroy(snl_capture *capture) { delete capture; }

}  // extern "C"
