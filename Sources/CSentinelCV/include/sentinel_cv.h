/// Sentinel's C bridge over OpenCV 4.6.
///
/// Every symbol starts with `snl_`. Handles are opaque and owned by the caller, who releases each with
/// its `_destroy`. Every fallible function returns an `snl_status` and, on failure, writes a message
/// into the caller's `snl_error`; no C++ exception ever crosses this boundary. Images are 8-bit BGR.
#ifndef SENTINEL_CV_H
#define SENTINEL_CV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define SNL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define SNL_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

typedef enum {
    SNL_OK = 0,
    SNL_ERR_ARGUMENT = 1,   ///< a caller mistake: bad size, null handle, unknown kind
    SNL_ERR_OPEN = 2,       ///< a file, device or URL could not be opened
    SNL_ERR_MODEL = 3,      ///< a model file could not be loaded
    SNL_ERR_EMPTY = 4,      ///< an empty (0x0) image where pixels were needed
    SNL_ERR_OPENCV = 5,     ///< OpenCV raised while processing
    SNL_ERR_WRITE = 6,      ///< an output could not be written
    SNL_ERR_UNKNOWN = 7,
} snl_status;

/// Filled on failure: OpenCV's text plus the path or URL involved. Never pixels.
typedef struct {
    char message[512];
} snl_error;

typedef struct snl_image snl_image;
typedef struct snl_capture snl_capture;
typedef struct snl_detector snl_detector;
typedef struct snl_classifier snl_classifier;
typedef struct snl_writer snl_writer;

/// A rectangle in pixels of the image it refers to.
typedef struct {
    float x, y, width, height;
} snl_rect;
SNL_STATIC_ASSERT(sizeof(snl_rect) == 16, "snl_rect is four packed floats");

typedef struct {
    uint8_t blue, green, red, alpha;
} snl_color;
SNL_STATIC_ASSERT(sizeof(snl_color) == 4, "snl_color is four bytes");

/// One detected face; `landmark_count` points (x, y pairs) are valid in `landmarks`.
typedef struct {
    snl_rect box;
    float score;
    int32_t landmark_count;
    float landmarks[10];
} snl_face;
SNL_STATIC_ASSERT(sizeof(snl_face) == 64, "snl_face layout is shared with Swift");

// MARK: Images

/// The OpenCV library's version, as loaded ("4.6.0"). Static storage; never fails.
const char *snl_opencv_version(void);

/// Threads OpenCV uses inside one call (its parallel loops), for the whole process; 0 restores its default. Never fails.
void snl_set_threads(int32_t count);

snl_status snl_image_create(int32_t width, int32_t height, snl_color fill, snl_image **out, snl_error *error);
snl_status snl_image_read(const char *path, snl_image **out, snl_error *error);
snl_status snl_image_clone(const snl_image *image, snl_image **out, snl_error *error);
/// A copy of `region` of the image, clipped to it.
snl_status snl_image_crop(const snl_image *image, snl_rect region, snl_image **out, snl_error *error);
/// Resized: a smaller image averages the pixels it covers, unless `sampled` (a bilinear sample of them: a twentieth of
/// the time at 1280x720 to 160x90, for a thumbnail whose cells are averaged anyway).
snl_status snl_image_resize(const snl_image *image, int32_t width, int32_t height, int32_t sampled, snl_image **out,
                            snl_error *error);
/// The image with `margin` pixels added on every side, each a mirror of the pixels inside the edge (the edge pixel
/// itself not repeated): a face cut by the edge, mirrored, is a whole face to a detector.
snl_status snl_image_pad_mirrored(const snl_image *image, int32_t margin, snl_image **out, snl_error *error);
void snl_image_destroy(snl_image *image);
int32_t snl_image_width(const snl_image *image);
int32_t snl_image_height(const snl_image *image);
/// Mean absolute difference (0-255) between a region of `a` and a region of `b` resized to it.
snl_status snl_image_region_difference(const snl_image *a, snl_rect region_a, const snl_image *b, snl_rect region_b,
                                       double *difference, snl_error *error);
/// Mean absolute difference (0-255, grey) between two images of one size over a grid of `columns` x `rows` cells,
/// written row by row into `cells` (columns * rows bytes).
snl_status snl_image_difference_grid(const snl_image *a, const snl_image *b, int32_t columns, int32_t rows,
                                     uint8_t *cells, snl_error *error);
/// Copies, from `source` into `image` (both of one size), the cells of a grid of `columns` x `rows` whose byte in
/// `which` (row by row, columns * rows bytes) is not 0. The cells are those of `snl_image_difference_grid`.
snl_status snl_image_copy_cells(snl_image *image, const snl_image *source, int32_t columns, int32_t rows,
                                const uint8_t *which, snl_error *error);
/// Variance of the Laplacian of a region's grey pixels: how much detail it shows.
snl_status snl_image_region_detail(const snl_image *image, snl_rect region, double *detail, snl_error *error);
/// How sharp a region is, whatever its size and most of its contrast: the variance of the Laplacian of its grey pixels
/// scaled to `side` x `side`, over their variance plus 100 (0 for a flat region). A face in focus and lit reads about
/// 0.1 to 1; blurred by motion or focus, or dark to the noise, under about 0.08.
snl_status snl_image_region_sharpness(const snl_image *image, snl_rect region, int32_t side, double *sharpness,
                                      snl_error *error);
/// Correlation (-1 to 1) of the Laplacians of one region of two images of one size: how much of `a`'s detail is
/// still where it was in `b`, whatever a mask's strength; 0 where either region is flat.
snl_status snl_image_region_detail_correlation(const snl_image *a, const snl_image *b, snl_rect region,
                                               double *correlation, snl_error *error);
snl_status snl_image_write(const snl_image *image, const char *path, snl_error *error);
/// Encodes the image in the format of `extension` (".jpg", ".png") into a buffer the caller frees with `snl_free`.
snl_status snl_image_encode(const snl_image *image, const char *extension, uint8_t **bytes, size_t *length,
                            snl_error *error);
/// Releases a buffer the bridge allocated.
void snl_free(void *buffer);

typedef enum {
    SNL_MASK_BLUR = 0,
    SNL_MASK_PIXELATE = 1,
    SNL_MASK_SOLID = 2,
} snl_mask_kind;

/// Hides a region in place. `strength` is the blur kernel or pixel block as a fraction of the region's side.
snl_status snl_image_mask(snl_image *image, snl_rect region, snl_mask_kind kind, float strength, snl_error *error);
/// Pastes `source_region` of `source` into `target_region` of `target`, resized, through an elliptical mask
/// whose edge fades over `feather` (a fraction of the region); `mirror` flips the source horizontally.
snl_status snl_image_composite(snl_image *target, snl_rect target_region, const snl_image *source,
                               snl_rect source_region, float feather, int32_t mirror, snl_error *error);

// MARK: Drawing

snl_status snl_draw_rect(snl_image *image, snl_rect rect, snl_color color, int32_t thickness, snl_error *error);
/// `points` holds `count` (x, y) pairs. A negative thickness fills; alpha below 255 blends.
snl_status snl_draw_polygon(snl_image *image, const float *points, int32_t count, snl_color color,
                            int32_t thickness, snl_error *error);
snl_status snl_draw_ellipse(snl_image *image, snl_rect bounds, snl_color color, int32_t thickness, snl_error *error);
snl_status snl_draw_text(snl_image *image, const char *text, float x, float y, float scale, snl_color color,
                         snl_error *error);
/// The size `snl_draw_text` gives `text` at `scale`: width, height above the baseline, and depth below it.
snl_status snl_text_size(const char *text, float scale, int32_t *width, int32_t *height, int32_t *baseline,
                         snl_error *error);

// MARK: Capture

typedef struct {
    double fps;           ///< as the container or driver states it; 0 when unknown
    int64_t frame_count;  ///< as the container states it; -1 when unknown
    int32_t width, height;
    uint32_t fourcc;      ///< the codec's four characters, low byte first (FFmpeg: h264, mp4v, MJPG); 0 when unknown
} snl_capture_info;

snl_status snl_capture_open_file(const char *path, snl_capture **out, snl_error *error);
snl_status snl_capture_open_device(int32_t index, int32_t width, int32_t height, snl_capture **out, snl_error *error);
snl_status snl_capture_open_url(const char *url, snl_capture **out, snl_error *error);
snl_status snl_capture_info_get(const snl_capture *capture, snl_capture_info *info, snl_error *error);
/// Reads the next frame. At the end of the stream (or where a file stops decoding) returns SNL_OK with
/// `*out` NULL. `position_ms` is the container's timestamp of the frame, where it has one.
snl_status snl_capture_read(snl_capture *capture, snl_image **out, double *position_ms, snl_error *error);
/// Moves a file capture to the frame at `position_ms` (decoding from the keyframe before it: exact, not the keyframe);
/// `frame_index` receives that frame's number. The next read returns it.
snl_status snl_capture_seek(snl_capture *capture, double position_ms, int64_t *frame_index, snl_error *error);
void snl_capture_destroy(snl_capture *capture);

// MARK: Face detection

typedef enum {
    SNL_DETECTOR_CASCADE = 0,     ///< Haar or LBP cascade XML (Debian's opencv-data)
    SNL_DETECTOR_CENTERFACE = 1,  ///< CenterFace ONNX through cv::dnn
    SNL_DETECTOR_YUNET = 2,       ///< YuNet 2022mar through cv::FaceDetectorYN
    SNL_DETECTOR_RETINAFACE = 3,  ///< RetinaFace-MobileNet0.25 ONNX (converted) through cv::dnn
} snl_detector_kind;

typedef struct {
    int32_t longest_side;    ///< frames are downscaled so their longest side is at most this (0: never)
    float score_threshold;   ///< 0-1
    float nms_threshold;     ///< IoU above which the weaker of two boxes is dropped
    float min_face;          ///< smallest face side kept, in pixels of the original frame
    float blank_stddev;      ///< frames whose grey standard deviation is below this have no faces
} snl_detect_settings;

snl_status snl_detector_create(snl_detector_kind kind, const char *model_path, const snl_detect_settings *settings,
                               snl_detector **out, snl_error *error);
/// Writes at most `capacity` faces, strongest first, in pixels of `image`; `*count` is how many were written.
snl_status snl_detector_detect(snl_detector *detector, const snl_image *image, snl_face *faces, int32_t capacity,
                               int32_t *count, snl_error *error);
/// The side, in the network's pixels, every region is detected at: one input size for all of them.
#define SNL_REGION_SIDE 128
/// Detects faces in `region_count` squares of `image` only (RetinaFace and the cascade; the others fail): each the side of its rectangle's longer side, around its
/// centre, moved inside the frame, brought to SNL_REGION_SIDE pixels. Faces are in pixels of `image`, strongest first,
/// with overlaps between regions removed as in a whole frame's.
snl_status snl_detector_detect_regions(snl_detector *detector, const snl_image *image, const snl_rect *regions,
                                       int32_t region_count, snl_face *faces, int32_t capacity, int32_t *count,
                                       snl_error *error);
void snl_detector_destroy(snl_detector *detector);

// MARK: Classification of a face crop

typedef enum {
    SNL_CHANNELS_GREY = 0,  ///< one grey channel
    SNL_CHANNELS_BGR = 1,   ///< three channels, blue first
    SNL_CHANNELS_RGB = 2,   ///< three channels, red first
} snl_channels;

/// How a classifier network wants its face crop: a model's description (Models/models.yml), as plain values.
typedef struct {
    int32_t width, height;  ///< the network's input size
    int32_t channels;       ///< snl_channels: the network's channels, in its order
    float mean[3];          ///< per channel of the network, subtracted from the 0-255 pixel value
    float scale[3];         ///< per channel of the network, multiplied after the mean is subtracted (1 / std)
    float margin;           ///< added to each side of the square crop, as a fraction of the face box side
    int32_t align;          ///< 1: the crop turned so that the eyes (the face's first two landmarks) are level
    int32_t mirror;         ///< 1: the mirrored crop is read too, as a second image of the batch
} snl_classifier_input;
SNL_STATIC_ASSERT(sizeof(snl_classifier_input) == 48, "snl_classifier_input layout is shared with Swift");

/// `feature_layer` (nullable): a layer whose outputs are also given, the features a head is fitted on (the name the
/// model's graph gives it; OpenCV's own `onnx_node!` prefix is tried too). `*feature_size` is its size for one image
/// (0 without a layer).
snl_status snl_classifier_create(const char *model_path, const snl_classifier_input *input, const char *feature_layer,
                                 snl_classifier **out, int32_t *feature_size, snl_error *error);
/// Runs the network on the square crop around `face` (turned by its eyes when the input says so and the face has two
/// landmarks), then on the mirrored crop when the input says so, and writes the outputs of each crop in turn:
/// `*count` values in all, at most `capacity` (a smaller capacity fails, naming the count needed). With a feature
/// layer, its values for each crop in turn go to `features` (`feature_size` a crop, room for two crops).
snl_status snl_classifier_run(snl_classifier *classifier, const snl_image *image, const snl_face *face,
                              float *values, int32_t capacity, int32_t *count, float *features, snl_error *error);
void snl_classifier_destroy(snl_classifier *classifier);

// MARK: Video output

/// `fourcc` is four characters such as "mp4v" or "MJPG".
snl_status snl_writer_open(const char *path, const char *fourcc, double fps, int32_t width, int32_t height,
                           snl_writer **out, snl_error *error);
snl_status snl_writer_write(snl_writer *writer, const snl_image *image, snl_error *error);
/// Finishes the file and releases the writer.
void snl_writer_destroy(snl_writer *writer);

#ifdef __cplusplus
}
#endif

#endif
