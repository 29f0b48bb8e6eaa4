package org.tent4j.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The page-size verdict for a shm directory, read from fake mount tables and shmem policies. */
class HugePagesTest {
    @TempDir
    Path tmp;

    private HugePages verdict(String dir, String shmOptions, String policy) throws IOException {
        Path mounts = Files.writeString(tmp.resolve("mounts"), String.join("\n",
                "/dev/vda1 / ext4 rw,relatime 0 0",
                "devtmpfs /dev devtmpfs rw,relatime,size=12334416k,mode=755 0 0",
                "tmpfs /dev/shm tmpfs rw,relatime,size=100k 0 0",
                "tmpfs /dev/shm tmpfs " + shmOptions + " 0 0",
                "tmpfs /mnt/my\\040shm tmpfs rw,huge=always 0 0",
                "none /mnt/huge hugetlbfs rw,pagesize=2M 0 0", ""));
        Path enabled = tmp.resolve("shmem_enabled");
        if (policy != null) {
            Files.writeString(enabled, policy + "\n");
        } else {
            Files.deleteIfExists(enabled);
        }
        return HugePages.of(Path.of(dir), mounts, enabled);
    }

    @Test
    void onlyATmpfsThatAllocatesHugePagesUnaskedCounts() throws IOException {
        String policy = "always within_size advise [never] deny force";
        HugePages within = verdict("/dev/shm", "rw,relatime,huge=within_size", policy);
        assertTrue(within.huge());
        assertEquals("tmpfs /dev/shm mounted huge=within_size", within.reason(), "the last of two mounts on one point");
        assertTrue(verdict("/dev/shm/sub", "rw,huge=always", policy).huge(), "a directory below the mount point");
        HugePages plain = verdict("/dev/shm", "rw,relatime,size=24683620k", policy);
        assertFalse(plain.huge());
        assertEquals("tmpfs /dev/shm mounted huge=never", plain.reason(), "no huge= option is never");
        HugePages advise = verdict("/dev/shm", "rw,huge=advise", policy);
        assertFalse(advise.huge(), "segments are allocated before any mapping could advise");
        assertTrue(advise.reason().contains("huge=advise"), advise.reason());
        assertTrue(verdict("/mnt/my shm", "rw", policy).huge(), "an escaped mount point");
        assertTrue(verdict("/mnt/huge", "rw", policy).huge(), "hugetlbfs");
        HugePages disk = verdict("/var/tmp", "rw", policy);
        assertFalse(disk.huge());
        assertEquals("ext4 / is not a memory file system", disk.reason());
    }

    @Test
    void theKernelsShmemPolicyOverridesTheMountWhereItForcesOrDenies() throws IOException {
        assertTrue(verdict("/dev/shm", "rw", "always within_size advise never deny [force]").huge());
        HugePages denied = verdict("/dev/shm", "rw,huge=always", "always within_size advise never [deny] force");
        assertFalse(denied.huge());
        assertTrue(denied.reason().endsWith("shmem_enabled is deny"), denied.reason());
        assertTrue(verdict("/dev/shm", "rw,huge=always", null).huge(), "no policy file: the mount decides");
    }

    @Test
    void anUnreadableMountTableIsNoHugePagesAndSaysWhy() {
        HugePages none = HugePages.of(Path.of("/dev/shm"), tmp.resolve("missing"), tmp.resolve("missing-too"));
        assertFalse(none.huge());
        assertTrue(none.reason().startsWith("cannot read " + tmp.resolve("missing")), none.reason());
    }

    @Test
    void thisMachinesVerdictNamesTheMountThatDecides() {
        HugePages here = HugePages.of(Path.of("/dev/shm"));
        assertTrue(here.reason().contains("/dev/shm") || here.reason().contains(" / "), here.reason());
    }
}
