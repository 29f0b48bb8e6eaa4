package org.tent4j.integration.nixl;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * An agent's metadata as a versioned blob: {@code "NXAM"}, u16 format version, agent name, generation, whether it is
 * partial, then per backend its id, its connection info (absent in partial metadata without it) and the public data of
 * each region. Blobs come from peers: every count and length is bounded before anything is allocated, and a bad blob
 * fails naming what is wrong.
 */
record AgentMetadata(String agent, long generation, boolean partial, List<Section> sections) {
    static final int VERSION = 1;
    static final int MAX_BLOB = 1 << 20;
    private static final int MAGIC = 0x4e58414d; // "NXAM"
    private static final int MAX_SECTIONS = 64;
    private static final int MAX_REGIONS = 1 << 16;
    private static final int MAX_NAME = 256;

    record Region(MemoryType type, Descriptor descriptor, byte[] publicData) {
    }

    /** One backend's part; {@code connectionInfo} is null when left out. */
    record Section(String backend, byte[] connectionInfo, List<Region> regions) {
    }

    byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeShort(VERSION);
            string(out, agent);
            out.writeLong(generation);
            out.writeBoolean(partial);
            out.writeShort(sections.size());
            for (Section s : sections) {
                string(out, s.backend());
                blob(out, s.connectionInfo());
                out.writeInt(s.regions().size());
                for (Region r : s.regions()) {
                    out.writeByte(r.type().ordinal());
                    out.writeLong(r.descriptor().address());
                    out.writeLong(r.descriptor().length());
                    out.writeInt(r.descriptor().devId());
                    blob(out, r.publicData());
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        if (bytes.size() > MAX_BLOB) {
            throw new NixlException(NixlStatus.NOT_SUPPORTED, "metadata of agent '" + agent + "' is " + bytes.size()
                    + " bytes, more than " + MAX_BLOB + "; publish partial metadata");
        }
        return bytes.toByteArray();
    }

    static AgentMetadata decode(byte[] blob) {
        if (blob == null || blob.length > MAX_BLOB) {
            throw bad("blob of " + (blob == null ? "null" : blob.length + " bytes (at most " + MAX_BLOB + ")"));
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(blob))) {
            if (blob.length < 6 || in.readInt() != MAGIC) {
                throw bad("not agent metadata (no NXAM header)");
            }
            int version = in.readUnsignedShort();
            if (version != VERSION) {
                throw bad("format version " + version + " (this agent reads " + VERSION + ")");
            }
            String agent = string(in, "agent name");
            long generation = in.readLong();
            boolean partial = in.readBoolean();
            int n = count(in.readUnsignedShort(), MAX_SECTIONS, "backend sections");
            List<Section> sections = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String id = string(in, "backend id");
                byte[] conn = blob(in, "connection info of " + id);
                int m = count(in.readInt(), MAX_REGIONS, "regions of " + id);
                List<Region> regions = new ArrayList<>(Math.min(m, 1024));
                for (int j = 0; j < m; j++) {
                    int t = in.readUnsignedByte();
                    if (t >= MemoryType.values().length) {
                        throw bad("region " + j + " of " + id + " has memory type " + t);
                    }
                    long addr = in.readLong();
                    long len = in.readLong();
                    int dev = in.readInt();
                    Descriptor d;
                    try {
                        d = new Descriptor(addr, len, dev);
                    } catch (NixlException e) {
                        throw bad("region " + j + " of " + id + ": " + e.getMessage());
                    }
                    byte[] pub = blob(in, "public data of region " + j + " of " + id);
                    regions.add(new Region(MemoryType.values()[t], d, pub == null ? new byte[0] : pub));
                }
                sections.add(new Section(id, conn, List.copyOf(regions)));
            }
            if (in.available() > 0) {
                throw bad(in.available() + " trailing bytes");
            }
            return new AgentMetadata(agent, generation, partial, List.copyOf(sections));
        } catch (IOException e) {
            throw bad("truncated (" + e + ")");
        }
    }

    private static void string(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeShort(b.length);
        out.write(b);
    }

    private static void blob(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b == null ? -1 : b.length);
        if (b != null) {
            out.write(b);
        }
    }

    private static String string(DataInputStream in, String what) throws IOException {
        int n = in.readUnsignedShort();
        if (n > MAX_NAME) {
            throw bad(what + " of " + n + " bytes (at most " + MAX_NAME + ")");
        }
        return new String(in.readNBytes(n), StandardCharsets.UTF_8);
    }

    private static byte[] blob(DataInputStream in, String what) throws IOException {
        int n = in.readInt();
        if (n == -1) {
            return null;
        }
        if (n < 0 || n > in.available()) {
            throw bad(what + " claims " + n + " bytes, " + in.available() + " left");
        }
        return in.readNBytes(n);
    }

    private static int count(int n, int max, String what) {
        if (n < 0 || n > max) {
            throw bad(n + " " + what + " (at most " + max + ")");
        }
        return n;
    }

    private static NixlException bad(String what) {
        return new NixlException(NixlStatus.INVALID_PARAM, "bad agent metadata: " + what);
    }
}
