public import Foundation
import SentinelCore
public import SentinelWire

/// Labelled photos of faces for measuring the emotion reading: a CSV of `image,emotion` rows beside a folder of
/// photos, or a folder holding one folder per label (FER2013 and AffectNet style). Labels are read as Sentinel's seven
/// (its names and the common spellings: anger, happiness, sadness, ...); any other label is read as the model's
/// description maps it (`contempt: disgust`), or refused and counted.
public struct EmotionLabels: Sendable {
    public struct Photo: Sendable, Equatable {
        /// As the labels name it (relative to the images folder).
        public var name: String
        public var path: String
        /// The label as written.
        public var label: String
        /// The person in the photo, where the name says (`Colin_Powell_0003.jpg`: Colin_Powell), for splitting by
        /// person; else the photo's own name.
        public var person: String
    }

    public var photos: [Photo]
    /// Labels that are none of the seven, with how each is read (an expression, or nil: refused) and how many photos.
    public var otherLabels: [(label: String, readAs: Emotion?, photos: Int)]

    /// The largest labels file read (a million rows is about 40 MB).
    public static let maxFileBytes = 64 << 20

    /// The photos `labels` names in `images` (a CSV file or a Label Studio export), or, without `labels`, the photos in
    /// each label's folder of `images`. `map` reads a label that is none of the seven (the model's description), nil to refuse it.
    public static func read(images: String, labels: String?, map: (String) -> Emotion? = { _ in nil })
        throws(LabelError)
        -> EmotionLabels
    {
        var rows: [(name: String, label: String)]
        if let labels {
            rows = try self.rows(read(labels), file: labels) { name in
                FileManager.default.fileExists(atPath: (images as NSString).appendingPathComponent(name))
            }
        } else {
            rows = try folders(images)
        }
        var photos: [Photo] = []
        var others: [String: (Emotion?, Int)] = [:]
        for row in rows {
            if Emotion(label: row.label) == nil {
                let readAs = map(row.label.lowercased())
                others[row.label, default: (readAs, 0)].1 += 1
                if readAs == nil { continue }
            }
            photos.append(
                Photo(
                    name: row.name, path: (images as NSString).appendingPathComponent(row.name), label: row.label,
                    person: person(of: row.name)))
        }
        return EmotionLabels(
            photos: photos,
            otherLabels: others.keys.sorted().map { ($0, others[$0]!.0, others[$0]!.1) })
    }

    /// A short fingerprint of the photos and their labels (names and labels, not pixels): a calibration fitted on them
    /// carries it, so that figures measured on the same photos can say they are in-sample.
    public var fingerprint: String {
        let rows = photos.map { "\($0.name),\($0.label)\n" }.sorted().joined()
        let hash = rows.utf8.reduce(14_695_981_039_346_656_037 as UInt64) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
        return String(hash, radix: 16).leftPadding(to: 16)
    }

    /// What a photo's labels read as, for scoring: the expression, by the same rule `read` used.
    public func emotion(of photo: Photo) -> Emotion? {
        Emotion(label: photo.label) ?? otherLabels.first { $0.label == photo.label }?.readAs
    }

    /// `Colin_Powell_0003.jpg` and `Dileep_12.jpg`: the name before the last `_digits`; else the file name itself.
    public static func person(of name: String) -> String {
        let file = ((name as NSString).lastPathComponent as NSString).deletingPathExtension
        guard let underscore = file.lastIndex(of: "_"), underscore != file.startIndex,
            file[file.index(after: underscore)...].allSatisfy(\.isNumber),
            file.index(after: underscore) != file.endIndex
        else { return file }
        return String(file[..<underscore])
    }

    /// The rows of a labels file: a Label Studio export where it is a JSON list (after any byte-order mark and white
    /// space), else CSV. `exists` says whether the images folder holds a name.
    public static func rows(_ data: Data, file: String, exists: (String) -> Bool) throws(LabelError) -> [(
        name: String, label: String
    )] {
        if data.first(where: { ![9, 10, 13, 32, 0xEF, 0xBB, 0xBF].contains($0) }) == UInt8(ascii: "[") {
            return try labelStudio(data, file: file, exists: exists)
        }
        return try csv(data, file: file)
    }

    /// A labels file's bytes, up to `maxFileBytes`.
    static func read(_ path: String) throws(LabelError) -> Data {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw LabelError(.unreadable, path, nil, "cannot read the file")
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.bytes(upTo: maxFileBytes + 1) } catch {
            throw LabelError(.unreadable, path, nil, "cannot read the file: \(error.localizedDescription)")
        }
        guard data.count <= maxFileBytes else {
            throw LabelError(.malformed, path, nil, "larger than \(maxFileBytes >> 20) MB")
        }
        return data
    }

    /// The rows of CSV text with a header naming the photo's column (`image`, `file`, `filename` or `path`) and the
    /// label's (`emotion`, `label` or `expression`); fields may be quoted as RFC 4180 says. `file` names it in errors.
    public static func csv(_ data: Data, file: String) throws(LabelError) -> [(name: String, label: String)] {
        guard let text = String(data: data, encoding: .utf8) else {
            throw LabelError(.malformed, file, nil, "not UTF-8 text")
        }
        let records = try records(text, file: file)
        guard let header = records.first else { throw LabelError(.malformed, file, nil, "empty: no header row") }
        let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let imageColumn = names.firstIndex(where: { ["image", "file", "filename", "path"].contains($0) }),
            let labelColumn = names.firstIndex(where: { ["emotion", "label", "expression"].contains($0) })
        else {
            throw LabelError(
                .malformed, file, "1",
                "the header must name the photo's column (image, file, filename or path) and the label's (emotion, label or expression)"
            )
        }
        var rows: [(String, String)] = []
        var seen = Set<String>()
        for record in records.dropFirst() where !(record.fields.count == 1 && record.fields[0].isEmpty) {
            let line = "\(record.line)"
            guard record.fields.count == names.count else {
                throw LabelError(
                    .malformed, file, line, "\(record.fields.count) fields where the header has \(names.count)")
            }
            let label = record.fields[labelColumn].trimmingCharacters(in: .whitespaces)
            rows.append(
                try row(
                    record.fields[imageColumn], label, field: names[imageColumn], labelField: names[labelColumn],
                    seen: &seen, file: file, at: line))
        }
        return rows
    }

    /// One photo's row, its name checked: `good.jpg`, `./good.jpg` and `.//good.jpg` are one photo, named one way and
    /// labelled once; a photo outside the images folder is not one of its photos.
    static func row(
        _ written: String, _ label: String, field: String, labelField: String, seen: inout Set<String>, file: String,
        at location: String
    ) throws(LabelError) -> (name: String, label: String) {
        let trimmed = written.trimmingCharacters(in: .whitespaces)
        let name =
            trimmed.hasPrefix("/") ? trimmed : trimmed.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
        guard !name.isEmpty, !label.isEmpty else {
            throw LabelError(.malformed, file, location, "an empty \(name.isEmpty ? field : labelField)")
        }
        guard !name.hasPrefix("/"), !name.split(separator: "/").contains("..") else {
            throw LabelError(.malformed, file, location, "\(field): \(name) is not inside the images folder")
        }
        guard seen.insert(name).inserted else {
            throw LabelError(.duplicateID, file, location, "\(name) is labelled twice")
        }
        return (name, label)
    }

    /// A Label Studio image-classification export (JSON: a list of tasks, each with its image under `data` and its
    /// annotations' `choices` results): a row for each task's first annotation not cancelled that chose one label.
    /// The image is named as Label Studio serves it: an upload (`/data/upload/3/1a2b3c4d-photo.jpg`, the 8-hex prefix
    /// Label Studio adds dropped when `exists` does not know the name with it), a local file
    /// (`/data/local-files/?d=faces/photo.jpg`, its shortest ending `exists` knows), or a URL (its last part). A task
    /// without such an annotation is passed over; one naming two labels, or none of its image, is an error naming the
    /// task.
    public static func labelStudio(_ data: Data, file: String, exists: (String) -> Bool) throws(LabelError)
        -> [(name: String, label: String)]
    {
        let tasks: [TrackFile.LabelStudioTask]
        do { tasks = try JSONDecoder().decode([TrackFile.LabelStudioTask].self, from: data) } catch {
            throw LabelError(
                .malformed, file, nil, "not a Label Studio JSON export (a list of tasks): \(Self.reason(error))")
        }
        var rows: [(String, String)] = []
        var seen = Set<String>()
        for (index, task) in tasks.enumerated() {
            let location = "task \(index + 1)" + (task.id?.number.map { " (id \($0))" } ?? "")
            let choices = (task.annotations ?? []).filter { $0.wasCancelled != true }.lazy
                .compactMap { $0.result?.first { $0.type == "choices" }?.value?.choices }.first
            guard let choices else { continue }
            guard choices.count == 1, let label = choices.first?.trimmingCharacters(in: .whitespaces) else {
                throw LabelError(
                    .malformed, file, location, "\(choices.count) choices: a face is labelled with one expression")
            }
            let data = task.data ?? [:]
            guard let url = data["image"]?.string ?? data.keys.sorted().lazy.compactMap({ data[$0]?.string }).first
            else {
                throw LabelError(.malformed, file, location, "data names no image")
            }
            rows.append(
                try row(
                    photo(url, exists: exists), label, field: "data.image", labelField: "choices", seen: &seen,
                    file: file, at: location))
        }
        guard !rows.isEmpty else {
            throw LabelError(
                .malformed, file, nil, "no task has an annotation choosing a label (\(tasks.count) tasks)")
        }
        return rows
    }

    /// The photo a Label Studio image URL names, relative to the images folder (see `labelStudio`).
    static func photo(_ url: String, exists: (String) -> Bool) -> String {
        if let query = url.range(of: "?d=") {
            let path = String(url[query.upperBound...]).removingPercentEncoding ?? String(url[query.upperBound...])
            let parts = path.split(separator: "/")
            for start in stride(from: parts.count - 1, through: 0, by: -1) {
                let name = parts[start...].joined(separator: "/")
                if exists(name) { return name }
            }
            return parts.last.map(String.init) ?? path
        }
        // A query or fragment (an access `?token=`) is no part of the photo's name, nor to be shown with it.
        let base = url.prefix { $0 != "?" && $0 != "#" }
        let last = String(base.split(separator: "/").last ?? "")
        let name = last.removingPercentEncoding ?? last
        // Label Studio names an upload `xxxxxxxx-name`.
        if !exists(name), let dash = name.firstIndex(of: "-"), name.distance(from: name.startIndex, to: dash) == 8,
            name[..<dash].allSatisfy(\.isHexDigit)
        {
            return String(name[name.index(after: dash)...])
        }
        return name
    }

    /// A decoding error in a line: where in the JSON, and what.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error.localizedDescription)" }
        switch error {
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context),
            .keyNotFound(_, let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return (path.isEmpty ? "" : "at \(path): ") + context.debugDescription
        @unknown default: return "\(error)"
        }
    }

    /// RFC 4180 records with the line each starts on.
    static func records(_ text: String, file: String) throws(LabelError) -> [(line: Int, fields: [String])] {
        var records: [(Int, [String])] = []
        var fields: [String] = []
        var field = ""
        var quoted = false
        var line = 1
        var start = 1
        var scalars = text.unicodeScalars.makeIterator()
        var pending = scalars.next()
        while let c = pending {
            pending = scalars.next()
            if quoted {
                if c == "\"" {
                    if pending == "\"" {
                        field.unicodeScalars.append(c)
                        pending = scalars.next()
                    } else {
                        quoted = false
                    }
                } else {
                    if c == "\n" { line += 1 }
                    field.unicodeScalars.append(c)
                }
                continue
            }
            switch c {
            case "\"" where field.isEmpty: quoted = true
            case ",":
                fields.append(field)
                field = ""
            case "\r" where pending == "\n": break
            case "\n", "\r":
                fields.append(field)
                records.append((start, fields))
                fields = []
                field = ""
                line += 1
                start = line
            default: field.unicodeScalars.append(c)
            }
        }
        if quoted { throw LabelError(.malformed, file, "\(start)", "a quoted field is not closed") }
        if !field.isEmpty || !fields.isEmpty {
            fields.append(field)
            records.append((start, fields))
        }
        return records
    }

    /// One folder per label, each holding that label's photos (pictures by extension; others are passed over).
    static func folders(_ images: String) throws(LabelError) -> [(name: String, label: String)] {
        let manager = FileManager.default
        guard let labels = try? manager.contentsOfDirectory(atPath: images) else {
            throw LabelError(.unreadable, images, nil, "not a folder that can be read")
        }
        var rows: [(String, String)] = []
        for label in labels.sorted() where !label.hasPrefix(".") {
            var folder: ObjCBool = false
            let path = (images as NSString).appendingPathComponent(label)
            guard manager.fileExists(atPath: path, isDirectory: &folder), folder.boolValue else { continue }
            let files = (try? manager.contentsOfDirectory(atPath: path)) ?? []
            for file in files.sorted() where pictureExtensions.contains((file as NSString).pathExtension.lowercased()) {
                rows.append(("\(label)/\(file)", label))
            }
        }
        guard !rows.isEmpty else {
            throw LabelError(
                .malformed, images, nil,
                "no photos in label folders (angry/, happy/, ...); with a CSV of image,emotion rows give --labels")
        }
        return rows
    }

    static let pictureExtensions: Set<String> = ["jpg", "jpeg", "png", "bmp", "webp", "tif", "tiff", "pgm", "ppm"]
}

extension String {
    fileprivate func leftPadding(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
