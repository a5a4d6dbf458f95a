/// A fleet names each site's camera `site/source`; a box's own cameras have no site.
public enum SiteSource {
    /// The fleet's name for `source` of `site`.
    public static func id(site: String, source: String) -> String { "\(site)/\(source)" }

    /// The site of a `site/source` name; nil for a box's own source.
    public static func site(of source: String) -> String? {
        source.contains("/") ? String(source.prefix { $0 != "/" }) : nil
    }
}
