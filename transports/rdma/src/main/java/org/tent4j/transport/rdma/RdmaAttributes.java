package org.tent4j.transport.rdma;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/**
 * What this transport publishes in segment descriptors, modelled on Mooncake's {@code devices: [{name, lid, gid}]} and
 * per-buffer {@code rkey: [...]} (one key per device, same order; reference §2.2), flattened to the string maps the
 * SPI carries:
 * <pre>
 * segment: devices = "mlx5_0,mlx5_1"
 *          lids    = "1,2"                       (decimal, 0 on RoCE)
 *          gids    = "fe:80:00:...:12,fe:80:..." (16 lower-case hex pairs joined by ':' per device)
 * buffer:  devices = "mlx5_0,mlx5_1"
 *          rkeys   = "4660,22136"                (unsigned 32-bit decimal, one per device, same order)
 * </pre>
 */
final class RdmaAttributes {
    static final String DEVICES = "devices";
    static final String LIDS = "lids";
    static final String GIDS = "gids";
    static final String RKEYS = "rkeys";

    private RdmaAttributes() {
    }

    /** A device as peers address it. */
    record DeviceAddress(String name, int lid, byte[] gid) {
        DeviceAddress {
            checkName(name);
            if (lid < 0 || lid > 0xFFFF) {
                throw new IllegalArgumentException("lid " + lid + " out of range 0..65535");
            }
            if (gid.length != 16) {
                throw new IllegalArgumentException("gid must be 16 bytes");
            }
            gid = gid.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof DeviceAddress d && name.equals(d.name) && lid == d.lid && Arrays.equals(gid, d.gid);
        }

        @Override
        public int hashCode() {
            return name.hashCode() * 31 + Arrays.hashCode(gid);
        }

        @Override
        public String toString() {
            return name + "(lid " + lid + ", gid " + VerbsValues.gidToString(gid) + ")";
        }
    }

    static Map<String, String> encodeSegment(List<DeviceAddress> devices) {
        List<String> names = new ArrayList<>();
        List<String> lids = new ArrayList<>();
        List<String> gids = new ArrayList<>();
        for (DeviceAddress d : devices) {
            names.add(d.name());
            lids.add(Integer.toString(d.lid()));
            gids.add(VerbsValues.gidToString(d.gid()));
        }
        Map<String, String> m = new LinkedHashMap<>();
        m.put(DEVICES, String.join(",", names));
        m.put(LIDS, String.join(",", lids));
        m.put(GIDS, String.join(",", gids));
        return m;
    }

    /**
     * The devices a peer published.
     *
     * @param segment names the peer in messages
     * @throws TransferException PROTOCOL when attributes are missing or malformed
     */
    static List<DeviceAddress> decodeSegment(String segment, Map<String, String> attributes) {
        String owner = "segment '" + segment + "'";
        List<String> names = split(owner, attributes, DEVICES);
        List<String> lids = split(owner, attributes, LIDS);
        List<String> gids = split(owner, attributes, GIDS);
        if (lids.size() != names.size() || gids.size() != names.size()) {
            throw malformed(owner, "lists " + names.size() + " devices, " + lids.size() + " lids and " + gids.size()
                    + " gids; they must match");
        }
        List<DeviceAddress> out = new ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            int lid;
            try {
                lid = Integer.parseInt(lids.get(i));
            } catch (NumberFormatException e) {
                throw malformed(owner, "lid '" + lids.get(i) + "' of device " + names.get(i) + " is not a number");
            }
            try {
                out.add(new DeviceAddress(names.get(i), lid, VerbsValues.gidFromString(gids.get(i))));
            } catch (IllegalArgumentException e) {
                throw malformed(owner, "device " + names.get(i) + ": " + e.getMessage());
            }
        }
        return out;
    }

    /** Buffer attributes: the devices it is registered on and its rkey on each. */
    static Map<String, String> encodeBuffer(List<String> deviceNames, int[] rkeys) {
        if (deviceNames.size() != rkeys.length) {
            throw new IllegalArgumentException(deviceNames.size() + " devices but " + rkeys.length + " rkeys");
        }
        deviceNames.forEach(RdmaAttributes::checkName);
        StringBuilder keys = new StringBuilder();
        for (int i = 0; i < rkeys.length; i++) {
            if (i > 0) {
                keys.append(',');
            }
            keys.append(Integer.toUnsignedString(rkeys[i]));
        }
        Map<String, String> m = new LinkedHashMap<>();
        m.put(DEVICES, String.join(",", deviceNames));
        m.put(RKEYS, keys.toString());
        return m;
    }

    /**
     * A remote buffer's rkeys, ordered as the peer's segment {@code devices} (a buffer may list its devices in another
     * order; keys are matched by device name).
     *
     * @throws TransferException PROTOCOL when the buffer's attributes are malformed or miss a segment device
     */
    static int[] decodeBufferKeys(String segment, long address, Map<String, String> attributes,
                                  List<DeviceAddress> segmentDevices) {
        String what = "segment '" + segment + "' buffer 0x" + Long.toHexString(address);
        List<String> names = split(what, attributes, DEVICES);
        List<String> keys = split(what, attributes, RKEYS);
        if (names.size() != keys.size()) {
            throw malformed(what, "lists " + names.size() + " devices but " + keys.size() + " rkeys");
        }
        int[] out = new int[segmentDevices.size()];
        for (int d = 0; d < segmentDevices.size(); d++) {
            int at = names.indexOf(segmentDevices.get(d).name());
            if (at < 0) {
                throw malformed(what, "has no rkey for device " + segmentDevices.get(d).name());
            }
            try {
                out[d] = Integer.parseUnsignedInt(keys.get(at));
            } catch (NumberFormatException e) {
                throw malformed(what, "rkey '" + keys.get(at) + "' is not an unsigned 32-bit number");
            }
        }
        return out;
    }

    private static List<String> split(String owner, Map<String, String> attributes, String key) {
        String v = attributes.get(key);
        if (v == null || v.isEmpty()) {
            throw malformed(owner, "publishes no '" + key + "'");
        }
        List<String> parts = List.of(v.split(",", -1));
        for (String p : parts) {
            if (p.isEmpty()) {
                throw malformed(owner, "'" + key + "' has an empty entry: '" + v + "'");
            }
        }
        return parts;
    }

    private static void checkName(String name) {
        if (name == null || name.isEmpty() || name.indexOf(',') >= 0) {
            throw new IllegalArgumentException("device name '" + name + "' must be non-empty and contain no ','");
        }
    }

    private static TransferException malformed(String owner, String what) {
        return new TransferException(ErrorCode.PROTOCOL, "rdma attributes of " + owner + " " + what);
    }
}
