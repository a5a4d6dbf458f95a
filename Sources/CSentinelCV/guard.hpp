// Shared by the bridge's C++ files: turns every exception into a status and a message.
#pragma once

#include "sentinel_cv.h"

#include <opencv2/core.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>

namespace snl {

/// A failure with its own status, thrown inside the bridge and caught by `guarded`.
struct failure : std::exception {
    snl_status status;
    std::string text;
    failure(snl_status status, std::string text) : status(status), text(std::move(text)) {}
    const char *what() const noexcept override { return text.c_str(); }
};

inline void write_message(snl_error *error, const std::string &text) {
    if (error == nullptr) return;
    std::snprintf(error->message, sizeof(error->message), "%s", text.c_str());
}

/// Runs `body`; any exception becomes a status plus message. `opencv_status` names what a cv::Exception means
/// in this call (loading a model, opening a file, or plain processing).
template <typename Body>
snl_status guarded(snl_error *error, snl_status opencv_status, Body &&body) noexcept {
    try {
        body();
        return SNL_OK;
    } catch (const failure &f) {
        write_message(error, f.text);
        return f.status;
    } catch (const cv::Exception &e) {
        // e.what() repeats file and line of OpenCV's source; err and func are what a user can act on.
        write_message(error, e.err.empty() ? std::string(e.what()) : e.func + ": " + e.err);
        return opencv_status;
    } catch (const std::exception &e) {
        write_message(error, e.what());
        return SNL_ERR_UNKNOWN;
    } catch (...) {
        write_message(error, "unknown C++ exception");
        return SNL_ERR_UNKNOWN;
    }
}

inline void require(bool condition, snl_status status, const std::string &text) {
    if (!condition) throw failure(status, text);
}

/// The part of `rect` inside an image of `size`, in whole pixels (may be empty).
inline cv::Rect clip(snl_rect rect, cv::Size size) {
    cv::Rect r(cv::Point(cvFloor(rect.x), cvFloor(rect.y)),
               cv::Point(cvCeil(rect.x + rect.width), cvCeil(rect.y + rect.height)));
    return r & cv::Rect(cv::Point(0, 0), size);
}

inline cv::Scalar scalar(snl_color c) { return cv::Scalar(c.blue, c.green, c.red); }

}  // namespace snl

/// The opaque handles are thin wrappers so that the header stays plain C.
struct snl_image {
    cv::Mat mat;
};
