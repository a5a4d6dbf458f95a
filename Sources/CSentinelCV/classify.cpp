// An ONNX classifier run on a square crop around a face (the emotion model), as its description asks.
#include "guard.hpp"

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <vector>

using snl::guarded;
using snl::require;

struct snl_classifier {
    cv::dnn::Net net;
    snl_classifier_input input;
    /// Whether the network takes the crop and its mirror image as one batch of two (one pass: 2.9 ms where two cost
    /// 3.7 ms for the mini-Xception on one core); many fix their batch at one, FER+ among them.
    bool pairs;
    /// The network's output, and the feature layer's name where one is asked for (empty: none) with its size an image.
    cv::String output, features;
    size_t feature_size;
};

namespace {

/// The square around the face, `margin` wider on each side, in the frame's BGR pixels; where it leaves the frame the
/// edge is repeated rather than the face shrunk. With `align` and two landmarks, the square is turned with the eyes'
/// line so that they are level in the crop.
cv::Mat square_crop(const cv::Mat &frame, const snl_face &face, const snl_classifier_input &in) {
    const snl_rect &box = face.box;
    float side = std::max(box.width, box.height) * (1 + 2 * in.margin);
    float cx = box.x + box.width / 2, cy = box.y + box.height / 2;
    if (in.align && face.landmark_count >= 2) {
        // The eyes are the first two landmarks (the order Detection.landmarks names, which every detector keeps);
        // which is which does not matter.
        float x0 = face.landmarks[0], y0 = face.landmarks[1], x1 = face.landmarks[2], y1 = face.landmarks[3];
        if (x1 < x0) std::swap(x0, x1), std::swap(y0, y1);
        double angle = std::atan2(y1 - y0, x1 - x0);
        if (angle != 0) {
            int size = std::max(1, cvRound(side));
            double c = std::cos(angle), s = std::sin(angle), h = size / 2.0;
            // From the crop to the frame: the crop's horizontal runs along the eyes' line, about the box's centre.
            cv::Matx23d to_frame(c, -s, cx - c * h + s * h, s, c, cy - s * h - c * h);
            cv::Mat crop;
            cv::warpAffine(frame, crop, to_frame, cv::Size(size, size), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                           cv::BORDER_REPLICATE);
            return crop;
        }
    }
    cv::Rect square(cvRound(cx - side / 2), cvRound(cy - side / 2), cvRound(side), cvRound(side));
    cv::Rect inside = square & cv::Rect(cv::Point(0, 0), frame.size());
    require(!inside.empty(), SNL_ERR_ARGUMENT, "face box outside the frame");
    cv::Mat crop;
    cv::copyMakeBorder(frame(inside), crop, inside.y - square.y, square.br().y - inside.br().y, inside.x - square.x,
                       square.br().x - inside.br().x, cv::BORDER_REPLICATE);
    return crop;
}

/// One crop as the network's input: its channels in the network's order, resized (bilinear, on the 8-bit pixels),
/// then `(value - mean) * scale` per channel, written plane by plane (NCHW) at `planes`.
void fill(const cv::Mat &pixels, const snl_classifier_input &in, float *planes) {
    int channels = pixels.channels();
    size_t area = size_t(in.width) * size_t(in.height);
    for (int y = 0; y < in.height; y++) {
        const uint8_t *row = pixels.ptr<uint8_t>(y);
        for (int x = 0; x < in.width; x++) {
            for (int c = 0; c < channels; c++) {
                planes[c * area + size_t(y) * in.width + x] = (float(row[x * channels + c]) - in.mean[c]) * in.scale[c];
            }
        }
    }
}

}  // namespace

extern "C" {

snl_status snl_classifier_create(const char *model_path, const snl_classifier_input *input, const char *feature_layer,
                                 snl_classifier **out, int32_t *feature_size, snl_error *error) {
    return guarded(error, SNL_ERR_MODEL, [&] {
        require(model_path != nullptr && input != nullptr, SNL_ERR_ARGUMENT, "null model path or input");
        require(input->width > 0 && input->height > 0 && input->width <= 4096 && input->height <= 4096,
                SNL_ERR_ARGUMENT, "bad classifier input size");
        require(input->channels >= SNL_CHANNELS_GREY && input->channels <= SNL_CHANNELS_RGB, SNL_ERR_ARGUMENT,
                "unknown channel order");
        auto handle = std::make_unique<snl_classifier>();
        try {
            handle->net = cv::dnn::readNetFromONNX(model_path);
        } catch (const cv::Exception &e) {
            throw snl::failure(SNL_ERR_MODEL, std::string("cannot load classifier ") + model_path + ": " + e.err);
        }
        require(!handle->net.empty(), SNL_ERR_MODEL, std::string("cannot load classifier ") + model_path);
        handle->input = *input;
        handle->pairs = false;
        handle->output = handle->net.getUnconnectedOutLayersNames().at(0);
        handle->feature_size = 0;
        int channels = input->channels == SNL_CHANNELS_GREY ? 1 : 3;
        if (feature_layer != nullptr && *feature_layer != 0) {
            for (cv::String name : {cv::String(feature_layer), "onnx_node!" + cv::String(feature_layer)}) {
                if (handle->net.getLayerId(name) >= 0) handle->features = name;
            }
            require(!handle->features.empty(), SNL_ERR_MODEL,
                    std::string("classifier ") + model_path + " has no layer " + feature_layer);
            int one[] = {1, channels, input->height, input->width};
            handle->net.setInput(cv::Mat(4, one, CV_32F, cv::Scalar(0)));
            handle->feature_size = handle->net.forward(handle->features).total();
        }
        if (feature_size != nullptr) *feature_size = int32_t(handle->feature_size);
        if (input->mirror) {
            // Probed once: a network that cannot take two images, or gives other than twice one image's outputs, is
            // run an image a pass.
            try {
                int one[] = {1, channels, input->height, input->width}, two[] = {2, channels, input->height, input->width};
                handle->net.setInput(cv::Mat(4, one, CV_32F, cv::Scalar(0)));
                size_t single = handle->net.forward().total();
                handle->net.setInput(cv::Mat(4, two, CV_32F, cv::Scalar(0)));
                handle->pairs = handle->net.forward().total() == 2 * single;
            } catch (const cv::Exception &) {
                handle->pairs = false;
            }
        }
        *out = handle.release();
    });
}

snl_status snl_classifier_run(snl_classifier *classifier, const snl_image *image, const snl_face *face,
                              float *values, int32_t capacity, int32_t *count, float *features, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(classifier != nullptr && image != nullptr && face != nullptr && values != nullptr && count != nullptr,
                SNL_ERR_ARGUMENT, "null argument");
        require(!image->mat.empty(), SNL_ERR_EMPTY, "empty frame (0x0)");
        require(face->box.width > 0 && face->box.height > 0, SNL_ERR_ARGUMENT, "empty face box");
        const snl_classifier_input &in = classifier->input;
        cv::Mat crop = square_crop(image->mat, *face, in);
        if (in.channels == SNL_CHANNELS_GREY) cv::cvtColor(crop, crop, cv::COLOR_BGR2GRAY);
        if (in.channels == SNL_CHANNELS_RGB) cv::cvtColor(crop, crop, cv::COLOR_BGR2RGB);
        cv::Mat pixels;
        cv::resize(crop, pixels, cv::Size(in.width, in.height), 0, 0, cv::INTER_LINEAR);
        std::vector<cv::Mat> crops{pixels};
        if (in.mirror) {
            crops.emplace_back();
            cv::flip(pixels, crops.back(), 1);
        }
        // Both crops in one pass where the network takes a batch of two, else one a pass.
        int batch = classifier->pairs ? 2 : 1;
        int shape[] = {batch, pixels.channels(), in.height, in.width};
        size_t plane = size_t(pixels.channels()) * in.width * in.height;
        size_t total = 0;
        bool featured = !classifier->features.empty();
        require(!featured || features != nullptr, SNL_ERR_ARGUMENT, "no room for the feature layer's values");
        for (size_t first = 0; first < crops.size(); first += batch) {
            cv::Mat blob(4, shape, CV_32F);
            for (int i = 0; i < batch; i++) fill(crops[first + i], in, blob.ptr<float>() + i * plane);
            classifier->net.setInput(blob);
            // One pass gives both the output and, where asked for, the feature layer.
            std::vector<cv::Mat> results;
            std::vector<cv::String> names{classifier->output};
            if (featured) names.push_back(classifier->features);
            classifier->net.forward(results, names);
            if (featured) {
                cv::Mat layer = results[1].isContinuous() ? results[1] : results[1].clone();
                require(layer.depth() == CV_32F && layer.total() == batch * classifier->feature_size, SNL_ERR_MODEL,
                        "the feature layer changed size");
                std::copy(layer.ptr<float>(), layer.ptr<float>() + layer.total(),
                          features + first * classifier->feature_size);
            }
            cv::Mat result = results[0];
            require(result.depth() == CV_32F && result.total() > 0, SNL_ERR_MODEL, "classifier output is not float");
            cv::Mat output = result.isContinuous() ? result : result.clone();
            require(total + output.total() <= size_t(capacity), SNL_ERR_ARGUMENT,
                    "classifier returned " + std::to_string(total + output.total()) + " values, room for " +
                        std::to_string(capacity));
            std::copy(output.ptr<float>(), output.ptr<float>() + output.total(), values + total);
            total += output.total();
        }
        *count = int32_t(total);
    });
}

void snl_classifier_destroy(snl_classifier *classifier) { delete classifier; }

}  // extern "C"
