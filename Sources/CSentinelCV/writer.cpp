// Video output through cv::VideoWriter.
#include "guard.hpp"

#include <opencv2/videoio.hpp>

#include <cstring>

using snl::guarded;
using snl::require;

struct snl_writer {
    cv::VideoWriter writer;
    cv::Size size;
};

extern "C" {

snl_status snl_writer_open(const char *path, const char *fourcc, double fps, int32_t width, int32_t height,
                           snl_writer **out, snl_error *error) {
    return guarded(error, SNL_ERR_WRITE, [&] {
        require(fourcc != nullptr && std::strlen(fourcc) == 4, SNL_ERR_ARGUMENT, "fourcc must be four characters");
        require(fps > 0 && width > 0 && height > 0, SNL_ERR_ARGUMENT, "video needs a positive size and rate");
        auto handle = std::make_unique<snl_writer>();
        handle->size = cv::Size(width, height);
        int code = cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]);
        handle->writer.open(path, cv::CAP_FFMPEG, code, fps, handle->size, true);
        require(handle->writer.isOpened(), SNL_ERR_WRITE,
                std::string("cannot open video ") + path + " for writing with codec " + fourcc);
        *out = handle.release();
    });
}

snl_status snl_writer_write(snl_writer *writer, const snl_image *image, snl_error *error) {
    return guarded(error, SNL_ERR_WRITE, [&] {
        require(writer != nullptr && image != nullptr, SNL_ERR_ARGUMENT, "null writer or image");
        require(image->mat.size() == writer->size, SNL_ERR_ARGUMENT, "frame size differs from the video's");
        writer->writer.write(image->mat);
    });
}

void snl_writer_destroy(snl_writer *writer) { delete writer; }

}  // extern "C"
