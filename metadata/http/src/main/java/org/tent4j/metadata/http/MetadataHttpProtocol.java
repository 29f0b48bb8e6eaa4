package org.tent4j.metadata.http;

/**
 * The HTTP metadata protocol: Mooncake's ({@code GET|PUT|DELETE <endpoint>?key=<url-encoded key>}; GET answers 200 with
 * the value or 404; PUT and DELETE answer 200) plus tent4j extensions that plain Mooncake servers ignore:
 * <ul>
 * <li>{@value #TTL_HEADER} on PUT: the key expires after that many milliseconds unless put again;</li>
 * <li>{@code GET <endpoint>/watch?key=..&version=..&timeout_ms=..}: long poll. Answers at once if the key's version
 * differs from {@code version} (or none is given), else when it changes or after {@code timeout_ms}; 200 + value, 404
 * when absent, 304 when nothing changed. Every answer carries {@value #VERSION_HEADER};</li>
 * <li>{@value #SERVER_HEADER} on every answer of a tent4j server, so clients know TTL and watch are honoured;</li>
 * <li>{@value #EXISTED_HEADER} on DELETE: whether the key existed (Mooncake's DELETE always answers 200).</li>
 * </ul>
 */
public final class MetadataHttpProtocol {
    /** Protocol revision a tent4j server announces in {@link #SERVER_HEADER}. */
    public static final String PROTOCOL_VERSION = "1";
    public static final String SERVER_HEADER = "X-Tent4j-Metadata-Server";
    public static final String TTL_HEADER = "X-Tent4j-TTL-Ms";
    public static final String VERSION_HEADER = "X-Tent4j-Version";
    public static final String EXISTED_HEADER = "X-Tent4j-Existed";
    /** Path suffix of the long-poll endpoint. */
    public static final String WATCH_SUFFIX = "/watch";
    /** Mooncake's reference servers serve {@code /metadata}. */
    public static final String DEFAULT_PATH = "/metadata";
    public static final String NOT_FOUND_BODY = "metadata not found";
    public static final String UPDATED_BODY = "metadata updated";
    public static final String DELETED_BODY = "metadata deleted";
    /** What Mooncake's Go server sends with every answer. */
    public static final String CONTENT_TYPE = "application/json; charset=utf-8";

    private MetadataHttpProtocol() {
    }
}
