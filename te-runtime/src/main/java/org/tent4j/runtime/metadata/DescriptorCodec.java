package org.tent4j.runtime.metadata;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Segment descriptors as compact JSON, the form stored in metadata stores and sent over the control plane:
 * <pre>{"name","machine_id","host","control_port","version","pid","instance","transports":[..],"transport_attrs":{id:{k:v}},
 *  "buffers":[{"addr","length","location","permission","transports":[..],"attrs":{id:{k:v}}}]}</pre>
 */
public final class DescriptorCodec {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A peer chooses it; ours are 16 hex digits. */
    private static final int MAX_INSTANCE_ID = 64;

    private DescriptorCodec() {
    }

    public static byte[] encode(SegmentDescriptor d) {
        ObjectNode root = JSON.createObjectNode();
        root.put("name", d.name());
        root.put("machine_id", d.machineId());
        root.put("host", d.host());
        root.put("control_port", d.controlPort());
        root.put("version", d.version());
        root.put("pid", d.pid());
        root.put("instance", d.instanceId());
        ArrayNode ts = root.putArray("transports");
        d.transports().forEach(ts::add);
        root.set("transport_attrs", attrs(d.transportAttributes()));
        ArrayNode bufs = root.putArray("buffers");
        for (BufferDescriptor b : d.buffers()) {
            ObjectNode n = bufs.addObject();
            n.put("addr", b.address());
            n.put("length", b.length());
            n.put("location", b.location().toString());
            n.put("permission", b.permission().name());
            ArrayNode bt = n.putArray("transports");
            b.transports().forEach(bt::add);
            n.set("attrs", attrs(b.attributes()));
        }
        try {
            return JSON.writeValueAsBytes(root);
        } catch (IOException e) {
            throw new TransferException(ErrorCode.INTERNAL, "cannot encode descriptor of " + d.name(), e);
        }
    }

    /**
     * Decodes a descriptor fetched for segment {@code expectedName}. A descriptor that names another segment is refused:
     * whoever can write one key of the store must not be able to pass for another engine (shm maps files by the
     * publishing segment's name).
     */
    public static SegmentDescriptor decodeFor(String expectedName, byte[] json, String source) {
        SegmentDescriptor d = decode(json, source);
        if (!d.name().equals(expectedName)) {
            throw new TransferException(ErrorCode.PROTOCOL, "descriptor from " + source + " fetched for segment '" + expectedName
                    + "' names segment '" + d.name() + "': refused");
        }
        return d;
    }

    public static SegmentDescriptor decode(byte[] json, String source) {
        try {
            JsonNode root = JSON.readTree(json);
            List<BufferDescriptor> buffers = new ArrayList<>();
            for (JsonNode n : required(root, "buffers", source)) {
                buffers.add(BufferDescriptor.builder().address(required(n, "addr", source).asLong())
                        .length(required(n, "length", source).asLong())
                        .location(Location.parse(required(n, "location", source).asText()))
                        .permission(Permission.valueOf(required(n, "permission", source).asText()))
                        .transports(strings(n.get("transports"))).attributes(attrs(n.get("attrs"))).build());
            }
            return SegmentDescriptor.builder().name(required(root, "name", source).asText())
                    .machineId(root.path("machine_id").asText("")).host(required(root, "host", source).asText())
                    .controlPort(root.path("control_port").asInt()).transports(strings(root.get("transports")))
                    .transportAttributes(attrs(root.get("transport_attrs"))).buffers(buffers)
                    .version(root.path("version").asLong()).pid(root.path("pid").asLong(0))
                    .instanceId(instance(root.path("instance").asText(""), source)).build();
        } catch (IOException | IllegalArgumentException e) {
            throw new TransferException(ErrorCode.PROTOCOL, "malformed segment descriptor from " + source + ": " + e.getMessage(), e);
        }
    }

    private static String instance(String id, String source) {
        if (id.length() > MAX_INSTANCE_ID) {
            throw new IllegalArgumentException("instance id of " + id.length() + " chars exceeds " + MAX_INSTANCE_ID + " (from " + source + ")");
        }
        return id;
    }

    private static JsonNode required(JsonNode n, String field, String source) {
        JsonNode v = n == null ? null : n.get(field);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException("field '" + field + "' is missing");
        }
        return v;
    }

    private static ObjectNode attrs(Map<String, Map<String, String>> m) {
        ObjectNode o = JSON.createObjectNode();
        m.forEach((id, kv) -> {
            ObjectNode inner = o.putObject(id);
            kv.forEach(inner::put);
        });
        return o;
    }

    private static Map<String, Map<String, String>> attrs(JsonNode n) {
        Map<String, Map<String, String>> out = new LinkedHashMap<>();
        if (n != null) {
            for (Map.Entry<String, JsonNode> e : n.properties()) {
                Map<String, String> kv = new LinkedHashMap<>();
                for (Map.Entry<String, JsonNode> f : e.getValue().properties()) {
                    kv.put(f.getKey(), f.getValue().asText());
                }
                out.put(e.getKey(), kv);
            }
        }
        return out;
    }

    private static List<String> strings(JsonNode n) {
        List<String> out = new ArrayList<>();
        if (n != null) {
            n.forEach(x -> out.add(x.asText()));
        }
        return out;
    }
}
