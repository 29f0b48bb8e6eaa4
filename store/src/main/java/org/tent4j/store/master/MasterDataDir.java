package org.tent4j.store.master;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

/**
 * A store master's data dir as {@link DurableLog} finds it before Ratis opens it: the {@link DurableLog#MARKER} that
 * says which group and master it belongs to, and the log segment files in it, for an error naming them.
 */
final class MasterDataDir {
    private MasterDataDir() {
    }

    /** The log segment files under {@code dataDir}, for an error naming them. */
    static List<String> segments(Path dataDir) {
        try (var files = Files.walk(dataDir.resolve("raft"))) {
            return files.filter(f -> f.getFileName().toString().startsWith("log_")).map(Path::toString).sorted().toList();
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    /**
     * True when the directory is new. A directory with files and no marker is someone else's; a marker naming
     * another peer or group belongs to another master: both refused, naming the file.
     */
    static boolean checkMarker(Path dir, String selfId, String group) throws IOException {
        Files.createDirectories(dir);
        Path marker = dir.resolve(DurableLog.MARKER);
        if (!Files.exists(marker)) {
            try (var files = Files.list(dir)) {
                if (files.findAny().isPresent()) {
                    throw new IOException(dir + " is not a store master's data dir: it holds files but no " + marker);
                }
            }
            // the log and snapshots hold the group's client-credential key: only this master's user reads them
            // (as etcd keeps its data dir 0700)
            if (Files.getFileStore(dir).supportsFileAttributeView(java.nio.file.attribute.PosixFileAttributeView.class)) {
                Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            }
            Properties p = new Properties();
            p.setProperty("group", group);
            p.setProperty("id", selfId);
            try (OutputStream out = Files.newOutputStream(marker)) {
                p.store(out, "tent4j store master data dir");
            }
            return true;
        }
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(marker)) {
            p.load(in);
        } catch (IllegalArgumentException malformed) {
            throw new IOException(marker + " is corrupt: " + malformed.getMessage(), malformed);
        }
        if (!group.equals(p.getProperty("group")) || !selfId.equals(p.getProperty("id"))) {
            throw new IOException(marker + " belongs to master " + p.getProperty("id") + " of group "
                    + p.getProperty("group") + ", not to master " + selfId + " of group " + group);
        }
        if (!Files.isDirectory(dir.resolve("raft"))) {
            throw new IOException(dir + " has " + marker.getFileName() + " but no raft/ log directory: refusing to "
                    + "start empty over a log that is gone");
        }
        return false;
    }
}
