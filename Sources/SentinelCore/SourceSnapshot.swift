/// A frame of a source with every face hidden as the review video hides it, as a JPEG: the zone editor's frame to draw
/// zones on, and the dashboard's still of a running camera. Made by the pipeline (`SourceSnapshot.take`, in
/// SentinelPipeline); a plain value here so that the HTTP edge serves it without reaching the pipeline.
public struct SourceSnapshot: Sendable {
    public var jpeg: [UInt8]
    public var width: Int
    public var height: Int
    /// Media time of the frame, in seconds.
    public var time: Double
    /// Regions hidden.
    public var masked: Int

    package init(jpeg: [UInt8], width: Int, height: Int, time: Double, masked: Int) {
        (self.jpeg, self.width, self.height, self.time, self.masked) = (jpeg, width, height, time, masked)
    }
}
