package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * A Mooncake metadata store, spoken the way a Mooncake engine speaks it, so that both find each other's segments:
 * keys from {@link MooncakeKeys}, values Mooncake's compact JSON, no TTL (Mooncake sets none).
 *
 * <p>Only Mooncake's HTTP metadata server is spoken here ({@code http://host:port/path}: {@code GET/PUT/DELETE
 * <endpoint>?key=<url-escaped key>}, 200 with the value, 404 when absent), with Mooncake's timeouts (1.5 s to connect,
 * 3 s in all). etcd and Redis need their clients, which a plugin on te-api alone does not have; see docs/INTEROP.md.
 */
public final class MooncakeMetadata implements AutoCloseable {
    static final Duration CONNECT_TIMEOUT = Duration.ofMillis(1500);
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);

    private final URI endpoint;
    private final String clusterId;
    private final HttpClient http;

    private MooncakeMetadata(URI endpoint, String clusterId) {
        this.endpoint = endpoint;
        this.clusterId = clusterId;
        this.http = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT).build();
    }

    /**
     * Opens a store by Mooncake's connection string, as far as this plugin speaks it.
     *
     * @param connection {@code http://host:port/path}, the whole URL being the endpoint as in Mooncake
     * @param clusterId  Mooncake's {@code MC_METADATA_CLUSTER_ID}, or empty
     * @throws TransferException INVALID_ARGUMENT for a connection string this plugin cannot speak, naming why
     */
    public static MooncakeMetadata open(String connection, String clusterId) {
        URI uri;
        try {
            uri = URI.create(connection);
        } catch (IllegalArgumentException e) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake metadata '" + connection
                    + "' is not a URL: " + e.getMessage());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme();
        if (!scheme.equals("http") || uri.getHost() == null) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake metadata '" + connection + "': only "
                    + "Mooncake's HTTP metadata server (http://host:port/path) is spoken by this plugin; etcd://, "
                    + "redis:// and P2PHANDSHAKE (use the handshake socket) are not");
        }
        return new MooncakeMetadata(uri, clusterId == null ? "" : clusterId);
    }

    public String endpoint() {
        return endpoint.toString();
    }

    /** The descriptor of Mooncake segment {@code name}. UNKNOWN_SEGMENT when absent; errors name the key. */
    public MooncakeSegmentDescriptor segment(String name) {
        String key = MooncakeKeys.segmentKey(clusterId, name);
        return MooncakeSegmentDescriptor.parse(endpoint + " key " + key, require(key, name));
    }

    /** Where Mooncake server {@code name}'s handshake socket, and its data host, are. */
    public MooncakeKeys.RpcMeta rpcMeta(String name) {
        String key = MooncakeKeys.rpcMetaKey(clusterId, name);
        return MooncakeKeys.parseRpcMeta(endpoint + " key " + key, require(key, name));
    }

    /** Publishes a segment as a Mooncake engine does: its descriptor, and its rpc_meta. */
    public void publish(MooncakeSegmentDescriptor descriptor, MooncakeKeys.RpcMeta where) {
        put(MooncakeKeys.segmentKey(clusterId, descriptor.name()), descriptor.toJson());
        put(MooncakeKeys.rpcMetaKey(clusterId, descriptor.name()), where.toJson());
    }

    /** Removes both keys of a segment, as Mooncake's {@code freeEngine} does. */
    public void remove(String name) {
        delete(MooncakeKeys.segmentKey(clusterId, name));
        delete(MooncakeKeys.rpcMetaKey(clusterId, name));
    }

    /** Stops the HTTP client's threads. */
    @Override
    public void close() {
        http.close();
    }

    private byte[] require(String key, String name) {
        return get(key).orElseThrow(() -> new TransferException(ErrorCode.UNKNOWN_SEGMENT, "no Mooncake segment '"
                + name + "': key " + key + " is absent at " + endpoint));
    }

    Optional<byte[]> get(String key) {
        HttpResponse<byte[]> r = send(HttpRequest.newBuilder(at(key)).GET(), key);
        if (r.statusCode() == 404) {
            return Optional.empty();
        }
        expect200(r, "GET", key);
        return Optional.of(r.body());
    }

    void put(String key, String json) {
        expect200(send(HttpRequest.newBuilder(at(key)).header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8)), key), "PUT", key);
    }

    void delete(String key) {
        HttpResponse<byte[]> r = send(HttpRequest.newBuilder(at(key)).DELETE(), key);
        if (r.statusCode() != 404) {
            expect200(r, "DELETE", key);
        }
    }

    private URI at(String key) {
        String query = "key=" + URLEncoder.encode(key, StandardCharsets.UTF_8);
        String base = endpoint.toString();
        return URI.create(base + (endpoint.getRawQuery() == null ? "?" : "&") + query);
    }

    private HttpResponse<byte[]> send(HttpRequest.Builder request, String key) {
        try {
            return http.send(request.timeout(REQUEST_TIMEOUT).build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "Mooncake metadata " + endpoint
                    + " unreachable for key " + key + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "interrupted asking Mooncake metadata "
                    + endpoint + " for key " + key, e);
        }
    }

    private void expect200(HttpResponse<byte[]> r, String verb, String key) {
        if (r.statusCode() != 200) {
            String body = new String(r.body(), 0, Math.min(r.body().length, 200), StandardCharsets.UTF_8);
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "Mooncake metadata " + endpoint + ": " + verb
                    + " of key " + key + " answered HTTP " + r.statusCode() + " (" + body.strip() + ")");
        }
    }
}
