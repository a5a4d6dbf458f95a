#include "sentinel_cv.h"

#include <opencv2/core/utility.hpp>

#include <string>

const char *snl_opencv_version(void) {
    // The library's own version, as loaded (not the headers'): built once, never freed.
    static const std::string version = cv::getVersionString();
    return version.c_str();
}

void snl_set_threads(int32_t count) { cv::setNumThreads(count > 0 ? count : -1); }
