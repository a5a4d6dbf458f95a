// The bench's reference: a minimal C++ loop that decodes a video and detects faces with OpenCV directly,
// with the same steps and settings as Sentinel's pipeline (blank test, downscale with INTER_AREA to the
// longest side, the detector, score and size filters, NMS). It shares no code with the bridge, so the ratio
// `sentinel bench` prints is the cost of Sentinel's layers over plain OpenCV.
//
// usage: sentinel-cxx-loop VIDEO none|cascade|centerface|retinaface|yunet MODEL LONGEST_SIDE SCORE NMS MIN_FACE BLANK MAX_FRAMES
// prints: frames=N seconds=S faces=F
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>
#include <opencv2/videoio.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

struct Face {
    cv::Rect2f box;
    float score;
};

int main(int argc, char **argv) {
    if (argc != 10) {
        std::fprintf(stderr, "usage: %s VIDEO none|cascade|centerface|retinaface|yunet MODEL LONGEST_SIDE SCORE NMS MIN_FACE BLANK MAX_FRAMES\n", argv[0]);
        return 2;
    }
    const std::string video = argv[1], kind = argv[2], model = argv[3];
    const int longest = std::atoi(argv[4]);
    const float score = std::atof(argv[5]), nms = std::atof(argv[6]), minFace = std::atof(argv[7]), blank = std::atof(argv[8]);
    const long maxFrames = std::atol(argv[9]);
    try {
        cv::VideoCapture capture(video, cv::CAP_FFMPEG);
        if (!capture.isOpened()) {
            std::fprintf(stderr, "cannot open %s\n", video.c_str());
            return 1;
        }
        cv::CascadeClassifier cascade;
        cv::Ptr<cv::FaceDetectorYN> yunet;
        cv::Size yunetSize;
        std::vector<uchar> centerfaceBytes;
        cv::dnn::Net centerface;
        cv::Size centerfaceSize;
        cv::dnn::Net retinaface;
        if (kind == "retinaface") retinaface = cv::dnn::readNetFromONNX(model);
        if (kind == "cascade" && !cascade.load(model)) return 1;
        if (kind == "centerface") {
            std::ifstream file(model, std::ios::binary);
            centerfaceBytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
        }
        long frames = 0, faces = 0;
        auto start = std::chrono::steady_clock::now();
        cv::Mat frame;
        while (frames < maxFrames && capture.read(frame)) {
            frames++;
            if (kind == "none") continue;
            cv::Mat small, grey;
            cv::resize(frame, small, cv::Size(64, 48), 0, 0, cv::INTER_AREA);
            cv::cvtColor(small, grey, cv::COLOR_BGR2GRAY);
            cv::Scalar mean, dev;
            cv::meanStdDev(grey, mean, dev);
            if (dev[0] < blank) continue;
            double factor = std::max(frame.cols, frame.rows) > longest ? double(longest) / std::max(frame.cols, frame.rows) : 1.0;
            cv::Mat scaled = frame;
            if (factor < 1) cv::resize(frame, scaled, cv::Size(), factor, factor, cv::INTER_AREA);
            std::vector<Face> found;
            if (kind == "cascade") {
                cv::Mat g;
                cv::cvtColor(scaled, g, cv::COLOR_BGR2GRAY);
                cv::equalizeHist(g, g);
                std::vector<cv::Rect> boxes;
                std::vector<int> neighbours;
                int side = std::max(12, int(minFace * factor));
                cascade.detectMultiScale(g, boxes, neighbours, 1.1, 1, 0, cv::Size(side, side));
                for (size_t i = 0; i < boxes.size(); i++) found.push_back({boxes[i], float(neighbours[i]) / (neighbours[i] + 4)});
            } else if (kind == "yunet") {
                if (scaled.size() != yunetSize) {
                    yunet = cv::FaceDetectorYN::create(model, "", scaled.size(), score, nms, 5000);
                    yunetSize = scaled.size();
                }
                cv::Mat rows;
                yunet->detect(scaled, rows);
                for (int i = 0; i < rows.rows; i++) {
                    const float *r = rows.ptr<float>(i);
                    found.push_back({cv::Rect2f(r[0], r[1], r[2], r[3]), r[14]});
                }
            } else if (kind == "centerface") {
                cv::Size size((scaled.cols + 31) / 32 * 32, (scaled.rows + 31) / 32 * 32);
                if (size != centerfaceSize) {
                    centerface = cv::dnn::readNetFromONNX(reinterpret_cast<const char *>(centerfaceBytes.data()), centerfaceBytes.size());
                    centerfaceSize = size;
                }
                centerface.setInput(cv::dnn::blobFromImage(scaled, 1.0, size, cv::Scalar(), true, false));
                std::vector<cv::Mat> out;
                centerface.forward(out, std::vector<cv::String>{"537", "538", "539", "540"});
                int h = out[0].size[2], w = out[0].size[3];
                const float *heat = out[0].ptr<float>(0, 0), *s0 = out[1].ptr<float>(0, 0), *s1 = out[1].ptr<float>(0, 1);
                const float *o0 = out[2].ptr<float>(0, 0), *o1 = out[2].ptr<float>(0, 1);
                float sx = float(size.width) / scaled.cols, sy = float(size.height) / scaled.rows;
                for (int i = 0; i < h * w; i++) {
                    if (heat[i] <= score) continue;
                    int y = i / w, x = i % w;
                    float bh = std::exp(s0[i]) * 4, bw = std::exp(s1[i]) * 4;
                    float x1 = std::max(0.f, (x + o1[i] + 0.5f) * 4 - bw / 2), y1 = std::max(0.f, (y + o0[i] + 0.5f) * 4 - bh / 2);
                    found.push_back({cv::Rect2f(x1 / sx, y1 / sy, bw / sx, bh / sy), heat[i]});
                }
            } else if (kind == "retinaface") {
                cv::Size size((scaled.cols + 31) / 32 * 32, (scaled.rows + 31) / 32 * 32);
                retinaface.setInput(cv::dnn::blobFromImage(scaled, 1.0, size, cv::Scalar(104, 117, 127), false, false), "input");
                std::vector<cv::Mat> out;
                retinaface.forward(out, std::vector<cv::String>{"loc", "conf"});
                const float *loc = out[0].ptr<float>(), *conf = out[1].ptr<float>();
                float sx = float(size.width) / scaled.cols, sy = float(size.height) / scaled.rows;
                const int strides[3] = {8, 16, 32};
                const float sides[3][2] = {{16, 32}, {64, 128}, {256, 512}};
                for (int level = 0, a = 0; level < 3; level++) {
                    int st = strides[level], nx = (size.width + st - 1) / st, ny = (size.height + st - 1) / st;
                    for (int i = 0; i < nx * ny * 2; i++, a++) {
                        if (conf[2 * a + 1] <= score) continue;
                        float side = sides[level][i % 2], ax = (i / 2 % nx + 0.5f) * st, ay = (i / 2 / nx + 0.5f) * st;
                        const float *l = loc + 4 * a;
                        float w = side * std::exp(l[2] * 0.2f), h = side * std::exp(l[3] * 0.2f);
                        float x1 = std::max(0.f, ax + l[0] * 0.1f * side - w / 2), y1 = std::max(0.f, ay + l[1] * 0.1f * side - h / 2);
                        found.push_back({cv::Rect2f(x1 / sx, y1 / sy, w / sx, h / sy), conf[2 * a + 1]});
                    }
                }
            }
            std::vector<cv::Rect2d> boxes;
            std::vector<float> scores;
            for (const Face &f : found) {
                cv::Rect2f b(f.box.x / factor, f.box.y / factor, f.box.width / factor, f.box.height / factor);
                if (f.score < score || std::min(b.width, b.height) < minFace) continue;
                boxes.push_back(b);
                scores.push_back(f.score);
            }
            std::vector<int> keep;
            if (kind == "yunet") {
                faces += boxes.size();
            } else {
                cv::dnn::NMSBoxes(boxes, scores, 0.f, nms, keep);
                faces += keep.size();
            }
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("frames=%ld seconds=%.4f faces=%ld\n", frames, seconds, faces);
        return 0;
    } catch (const cv::Exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
