/// The wire types (what the API, the event stream and MQTT carry) are SentinelWire's, in the client package: one
/// definition for the server that writes them and the apps that read them. Every layer sees them through here.
@_exported import SentinelWire
