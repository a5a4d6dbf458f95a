// An ONNX classifier run on a square crop around a face (the emotion model).
#include "guard.hpp"

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

using snl::guarded;
using snl::require;

struct snl_classifier {
    cv::dnn::Net net;
    snl_classifier_input input;
    int32_t outputs;
};

extern "C" {

snl_status snl_classifier_create(const char *model_path, const snl_classifier_input *input, int32_t outputs,
                                 snl_classifier **out, snl_error *error) {
    return guarded(error, SNL_ERR_MODEL, [&] {
        require(model_path != nullptr && input != nullptr, SNL_ERR_ARGUMENT, "null model path or input");
        require(input->width > 0 && input->height > 0 && outputs > 0, SNL_ERR_ARGUMENT, "bad classifier shape");
        auto handle = std::make_unique<snl_classifier>();
        try {
            handle->net = cv::dnn::readNetFromONNX(model_path);
        } catch (const cv::Exception &e) {
            throw snl::failure(SNL_ERR_MODEL, std::string("cannot load classifier ") + model_path + ": " + e.err);
        }
        require(!handle->net.empty(), SNL_ERR_MODEL, std::string("cannot load classifier ") + model_path);
        handle->input = *input;
        handle->outputs = outputs;
        *out = handle.release();
    });
}

snl_status snl_classifier_run(snl_classifier *classifier, const snl_image *image, snl_rect face, float *values,
                              snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(classifier != nullptr && image != nullptr && values != nullptr, SNL_ERR_ARGUMENT, "null argument");
        require(!image->mat.empty(), SNL_ERR_EMPTY, "empty frame (0x0)");
        require(face.width > 0 && face.height > 0, SNL_ERR_ARGUMENT, "empty face box");
        const snl_classifier_input &in = classifier->input;
        float side = std::max(face.width, face.height) * (1 + 2 * in.margin);
        float cx = face.x + face.width / 2, cy = face.y + face.height / 2;
        cv::Rect square(cvRound(cx - side / 2), cvRound(cy - side / 2), cvRound(side), cvRound(side));
        // Where the square leaves the frame, repeat its edge rather than shrinking the face.
        cv::Rect inside = square & cv::Rect(cv::Point(0, 0), image->mat.size());
        require(!inside.empty(), SNL_ERR_ARGUMENT, "face box outside the frame");
        cv::Mat crop;
        cv::copyMakeBorder(image->mat(inside), crop, inside.y - square.y, square.br().y - inside.br().y,
                           inside.x - square.x, square.br().x - inside.br().x, cv::BORDER_REPLICATE);
        if (in.grey) cv::cvtColor(crop, crop, cv::COLOR_BGR2GRAY);
        cv::Mat blob = cv::dnn::blobFromImage(crop, in.scale, cv::Size(in.width, in.height), cv::Scalar::all(in.mean),
                                              false, false);
        classifier->net.setInput(blob);
        cv::Mat result = classifier->net.forward();
        require(int(result.total()) == classifier->outputs, SNL_ERR_MODEL,
                "classifier returned " + std::to_string(result.total()) + " values, expected " +
                    std::to_string(classifier->outputs));
        std::copy(result.ptr<float>(), result.ptr<float>() + classifier->outputs, values);
    });
}

void snl_classifier_destroy(snl_classifier *classifier) { delete classifier; }

}  // extern "C"
