// Images, masking, compositing and drawing.
#include "guard.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdlib>
#include <cstring>
#include <vector>

using snl::guarded;
using snl::require;

namespace {

const cv::Mat &pixels(const snl_image *image) {
    require(image != nullptr, SNL_ERR_ARGUMENT, "null image");
    require(!image->mat.empty(), SNL_ERR_EMPTY, "empty image (0x0)");
    return image->mat;
}

cv::Mat &pixels(snl_image *image) { return const_cast<cv::Mat &>(pixels(static_cast<const snl_image *>(image))); }

cv::Mat grey(const cv::Mat &bgr) {
    cv::Mat out;
    cv::cvtColor(bgr, out, cv::COLOR_BGR2GRAY);
    return out;
}

}  // namespace

extern "C" {

snl_status snl_image_create(int32_t width, int32_t height, snl_color fill, snl_image **out, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(width >= 0 && height >= 0, SNL_ERR_ARGUMENT, "negative image size");
        // Owned until the pixels exist: a cv::Mat that cannot be allocated throws, and must not leak the handle.
        auto image = std::make_unique<snl_image>();
        if (width > 0 && height > 0) image->mat = cv::Mat(height, width, CV_8UC3, snl::scalar(fill));
        *out = image.release();
    });
}

snl_status snl_image_read(const char *path, snl_image **out, snl_error *error) {
    return guarded(error, SNL_ERR_OPEN, [&] {
        cv::Mat mat = cv::imread(path, cv::IMREAD_COLOR);
        require(!mat.empty(), SNL_ERR_OPEN, std::string("cannot read image ") + path);
        *out = new snl_image{mat};
    });
}

snl_status snl_image_clone(const snl_image *image, snl_image **out, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(image != nullptr, SNL_ERR_ARGUMENT, "null image");
        *out = new snl_image{image->mat.clone()};
    });
}

snl_status snl_image_crop(const snl_image *image, snl_rect region, snl_image **out, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::Rect r = snl::clip(region, pixels(image).size());
        require(!r.empty(), SNL_ERR_ARGUMENT, "region outside the image");
        *out = new snl_image{pixels(image)(r).clone()};
    });
}

snl_status snl_image_resize(const snl_image *image, int32_t width, int32_t height, int32_t sampled, snl_image **out,
                            snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(width > 0 && height > 0, SNL_ERR_ARGUMENT, "resize needs a positive size");
        const cv::Mat &src = pixels(image);
        auto result = std::make_unique<snl_image>();
        cv::resize(src, result->mat, cv::Size(width, height), 0, 0,
                   width < src.cols && !sampled ? cv::INTER_AREA : cv::INTER_LINEAR);
        *out = result.release();
    });
}

snl_status snl_image_pad_mirrored(const snl_image *image, int32_t margin, snl_image **out, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        const cv::Mat &src = pixels(image);
        // BORDER_REFLECT_101 mirrors at most the image's side less one.
        require(margin >= 0 && margin < src.cols && margin < src.rows, SNL_ERR_ARGUMENT,
                "a mirrored margin must be smaller than the image");
        auto result = std::make_unique<snl_image>();
        cv::copyMakeBorder(src, result->mat, margin, margin, margin, margin, cv::BORDER_REFLECT_101);
        *out = result.release();
    });
}

void snl_image_destroy(snl_image *image) { delete image; }
int32_t snl_image_width(const snl_image *image) { return image->mat.cols; }
int32_t snl_image_height(const snl_image *image) { return image->mat.rows; }

snl_status snl_image_region_difference(const snl_image *a, snl_rect region_a, const snl_image *b, snl_rect region_b,
                                       double *difference, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::Rect ra = snl::clip(region_a, pixels(a).size()), rb = snl::clip(region_b, pixels(b).size());
        require(!ra.empty() && !rb.empty(), SNL_ERR_ARGUMENT, "region outside the image");
        cv::Mat resized;
        cv::resize(pixels(b)(rb), resized, ra.size(), 0, 0, cv::INTER_AREA);
        cv::Mat diff;
        cv::absdiff(pixels(a)(ra), resized, diff);
        cv::Scalar m = cv::mean(diff);
        *difference = (m[0] + m[1] + m[2]) / 3.0;
    });
}

snl_status snl_image_difference_grid(const snl_image *a, const snl_image *b, int32_t columns, int32_t rows,
                                     uint8_t *cells, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        const cv::Mat &pa = pixels(a), &pb = pixels(b);
        require(pa.size() == pb.size(), SNL_ERR_ARGUMENT, "images of different sizes");
        require(columns > 0 && rows > 0 && columns <= pa.cols && rows <= pa.rows, SNL_ERR_ARGUMENT,
                "a grid of no cells, or of more cells than pixels");
        cv::Mat diff, grid;
        cv::absdiff(pa, pb, diff);
        cv::resize(grey(diff), grid, cv::Size(columns, rows), 0, 0, cv::INTER_AREA);
        for (int y = 0; y < rows; ++y) std::memcpy(cells + static_cast<size_t>(y) * columns, grid.ptr<uint8_t>(y), columns);
    });
}

snl_status snl_image_copy_cells(snl_image *image, const snl_image *source, int32_t columns, int32_t rows,
                                const uint8_t *which, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::Mat &to = pixels(image);
        const cv::Mat &from = pixels(source);
        require(to.size() == from.size() && to.type() == from.type(), SNL_ERR_ARGUMENT, "images of different sizes");
        require(columns > 0 && rows > 0 && columns <= to.cols && rows <= to.rows, SNL_ERR_ARGUMENT,
                "a grid of no cells, or of more cells than pixels");
        for (int y = 0; y < rows; ++y) {
            for (int x = 0; x < columns; ++x) {
                if (which[static_cast<size_t>(y) * columns + x] == 0) continue;
                const int x0 = x * to.cols / columns, x1 = (x + 1) * to.cols / columns;
                const int y0 = y * to.rows / rows, y1 = (y + 1) * to.rows / rows;
                const cv::Rect cell(x0, y0, x1 - x0, y1 - y0);
                from(cell).copyTo(to(cell));
            }
        }
    });
}

snl_status snl_image_region_detail_correlation(const snl_image *a, const snl_image *b, snl_rect region,
                                               double *correlation, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(pixels(a).size() == pixels(b).size(), SNL_ERR_ARGUMENT, "images of different sizes");
        cv::Rect r = snl::clip(region, pixels(a).size());
        require(!r.empty(), SNL_ERR_ARGUMENT, "region outside the image");
        cv::Mat la, lb;
        cv::Laplacian(grey(pixels(a)(r)), la, CV_64F);
        cv::Laplacian(grey(pixels(b)(r)), lb, CV_64F);
        cv::Scalar ma, sa, mb, sb;
        cv::meanStdDev(la, ma, sa);
        cv::meanStdDev(lb, mb, sb);
        if (sa[0] <= 0 || sb[0] <= 0) {
            *correlation = 0;
            return;
        }
        const double covariance = cv::mean((la - ma[0]).mul(lb - mb[0]))[0];
        *correlation = covariance / (sa[0] * sb[0]);
    });
}

snl_status snl_image_region_detail(const snl_image *image, snl_rect region, double *detail, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::Rect r = snl::clip(region, pixels(image).size());
        require(!r.empty(), SNL_ERR_ARGUMENT, "region outside the image");
        cv::Mat lap;
        cv::Laplacian(grey(pixels(image)(r)), lap, CV_64F);
        cv::Scalar m, s;
        cv::meanStdDev(lap, m, s);
        *detail = s[0] * s[0];
    });
}

snl_status snl_image_region_sharpness(const snl_image *image, snl_rect region, int32_t side, double *sharpness,
                                      snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(side >= 8 && side <= 1024, SNL_ERR_ARGUMENT, "side must be 8 to 1024");
        cv::Rect r = snl::clip(region, pixels(image).size());
        require(!r.empty(), SNL_ERR_ARGUMENT, "region outside the image");
        cv::Mat small, lap;
        cv::resize(grey(pixels(image)(r)), small, cv::Size(side, side), 0, 0, cv::INTER_AREA);
        small.convertTo(small, CV_64F);
        cv::Laplacian(small, lap, CV_64F);
        cv::Scalar m, s, gm, gs;
        cv::meanStdDev(lap, m, s);
        cv::meanStdDev(small, gm, gs);
        // The floor (a grey level's deviation of 10) keeps a face dark to the noise from reading sharp.
        *sharpness = (s[0] * s[0]) / (gs[0] * gs[0] + 100);
    });
}

snl_status snl_image_write(const snl_image *image, const char *path, snl_error *error) {
    return guarded(error, SNL_ERR_WRITE, [&] {
        require(cv::imwrite(path, pixels(image)), SNL_ERR_WRITE, std::string("cannot write image ") + path);
    });
}

snl_status snl_image_encode(const snl_image *image, const char *extension, uint8_t **bytes, size_t *length,
                            snl_error *error) {
    return guarded(error, SNL_ERR_WRITE, [&] {
        std::vector<uchar> encoded;
        require(cv::imencode(extension, pixels(image), encoded), SNL_ERR_WRITE,
                std::string("cannot encode image as ") + extension);
        auto *copy = static_cast<uint8_t *>(std::malloc(encoded.size()));
        require(copy != nullptr, SNL_ERR_WRITE, "out of memory encoding an image");
        std::memcpy(copy, encoded.data(), encoded.size());
        *bytes = copy;
        *length = encoded.size();
    });
}

void snl_free(void *buffer) { std::free(buffer); }

snl_status snl_image_mask(snl_image *image, snl_rect region, snl_mask_kind kind, float strength, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::Mat &mat = pixels(image);
        cv::Rect r = snl::clip(region, mat.size());
        if (r.empty()) return;
        cv::Mat roi = mat(r);
        int side = std::max(r.width, r.height);
        switch (kind) {
        case SNL_MASK_BLUR: {
            int k = std::max(3, int(side * strength)) | 1;
            // Two passes of a wide box blur approximate a Gaussian at a fraction of its cost.
            cv::blur(roi, roi, cv::Size(k, k));
            cv::blur(roi, roi, cv::Size(k, k));
            break;
        }
        case SNL_MASK_PIXELATE: {
            int block = std::max(2, int(side * strength));
            cv::Mat small;
            cv::resize(roi, small, cv::Size(std::max(1, r.width / block), std::max(1, r.height / block)), 0, 0,
                       cv::INTER_AREA);
            cv::resize(small, roi, r.size(), 0, 0, cv::INTER_NEAREST);
            break;
        }
        case SNL_MASK_SOLID:
            roi.setTo(cv::Scalar(0, 0, 0));
            break;
        default:
            throw snl::failure(SNL_ERR_ARGUMENT, "unknown mask kind");
        }
    });
}

snl_status snl_image_composite(snl_image *target, snl_rect target_region, const snl_image *source,
                               snl_rect source_region, float feather, int32_t mirror, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::Mat &dst = pixels(target);
        const cv::Mat &src = pixels(source);
        cv::Rect sr = snl::clip(source_region, src.size());
        require(!sr.empty(), SNL_ERR_ARGUMENT, "source region outside the source image");
        // Place the whole target region, then keep the part inside the frame.
        cv::Rect full(cvRound(target_region.x), cvRound(target_region.y), cvRound(target_region.width),
                      cvRound(target_region.height));
        if (full.width <= 0 || full.height <= 0) return;
        cv::Rect visible = full & cv::Rect(cv::Point(0, 0), dst.size());
        if (visible.empty()) return;
        cv::Mat patch;
        cv::resize(src(sr), patch, full.size(), 0, 0, full.width < sr.width ? cv::INTER_AREA : cv::INTER_LINEAR);
        if (mirror) cv::flip(patch, patch, 1);
        cv::Mat alpha(full.size(), CV_32F, cv::Scalar(0));
        cv::Point centre(full.width / 2, full.height / 2);
        cv::ellipse(alpha, centre, cv::Size(full.width / 2, full.height / 2), 0, 0, 360, cv::Scalar(1), cv::FILLED,
                    cv::LINE_AA);
        int k = std::max(1, int(std::min(full.width, full.height) * feather)) | 1;
        if (k > 1) cv::GaussianBlur(alpha, alpha, cv::Size(k, k), 0);
        cv::Rect inPatch(visible.x - full.x, visible.y - full.y, visible.width, visible.height);
        cv::Mat a = alpha(inPatch), p, d;
        patch(inPatch).convertTo(p, CV_32FC3);
        dst(visible).convertTo(d, CV_32FC3);
        cv::Mat a3;
        cv::merge(std::vector<cv::Mat>{a, a, a}, a3);
        cv::Mat blended = p.mul(a3) + d.mul(cv::Scalar::all(1.0) - a3);
        blended.convertTo(dst(visible), CV_8UC3);
    });
}

snl_status snl_draw_rect(snl_image *image, snl_rect rect, snl_color color, int32_t thickness, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::rectangle(pixels(image), cv::Rect2f(rect.x, rect.y, rect.width, rect.height), snl::scalar(color),
                      thickness, cv::LINE_AA);
    });
}

snl_status snl_draw_polygon(snl_image *image, const float *points, int32_t count, snl_color color,
                            int32_t thickness, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(points != nullptr && count >= 2, SNL_ERR_ARGUMENT, "a polygon needs at least two points");
        cv::Mat &mat = pixels(image);
        std::vector<cv::Point> poly;
        for (int i = 0; i < count; i++) poly.emplace_back(cvRound(points[2 * i]), cvRound(points[2 * i + 1]));
        cv::Mat canvas = color.alpha < 255 ? mat.clone() : mat;
        if (thickness < 0)
            cv::fillPoly(canvas, std::vector<std::vector<cv::Point>>{poly}, snl::scalar(color), cv::LINE_AA);
        else
            cv::polylines(canvas, poly, true, snl::scalar(color), thickness, cv::LINE_AA);
        if (color.alpha < 255) cv::addWeighted(canvas, color.alpha / 255.0, mat, 1 - color.alpha / 255.0, 0, mat);
    });
}

snl_status snl_draw_ellipse(snl_image *image, snl_rect bounds, snl_color color, int32_t thickness, snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::RotatedRect box(cv::Point2f(bounds.x + bounds.width / 2, bounds.y + bounds.height / 2),
                            cv::Size2f(bounds.width, bounds.height), 0);
        cv::ellipse(pixels(image), box, snl::scalar(color), thickness < 0 ? cv::FILLED : thickness, cv::LINE_AA);
    });
}

snl_status snl_draw_text(snl_image *image, const char *text, float x, float y, float scale, snl_color color,
                         snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        cv::putText(pixels(image), text, cv::Point(cvRound(x), cvRound(y)), cv::FONT_HERSHEY_SIMPLEX, scale,
                    snl::scalar(color), std::max(1, int(scale * 2)), cv::LINE_AA);
    });
}

snl_status snl_text_size(const char *text, float scale, int32_t *width, int32_t *height, int32_t *baseline,
                         snl_error *error) {
    return guarded(error, SNL_ERR_OPENCV, [&] {
        require(text != nullptr && width != nullptr && height != nullptr && baseline != nullptr, SNL_ERR_ARGUMENT,
                "text and the three sizes are required");
        int base = 0;
        cv::Size size = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, scale, std::max(1, int(scale * 2)), &base);
        *width = size.width;
        *height = size.height;
        *baseline = base;
    });
}

}  // extern "C"
