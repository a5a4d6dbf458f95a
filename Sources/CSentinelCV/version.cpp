#include "sentinel_cv.h"

#include <opencv2/core/utility.hpp>

#include <mutex>
#include <string>

const char *snl_opencv_version(void) {
    // The library's own version, as loaded (not the headers'): built once, never freed.
    static const std::string version = cv::getVersionString();
    return version.c_str();
}

void snl_set_threads(int32_t count) {
    // cv::setNumThreads rebuilds the parallel backend's pool, which a parallel loop running meanwhile on another
    // thread may still use (a crash inside TBB, seen with services started beside detections in one process): it is
    // called only when the count changes, and callers change it before analysis starts.
    static std::mutex lock;
    static int32_t current = 0;
    std::lock_guard<std::mutex> guard(lock);
    if (count == current) return;
    current = count;
    cv::setNumThreads(count > 0 ? count : -1);
}
