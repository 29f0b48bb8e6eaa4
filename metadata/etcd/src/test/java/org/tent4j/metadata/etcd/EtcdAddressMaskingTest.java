package org.tent4j.metadata.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** Needs no etcd: the address as messages show it, through the masking every backend shares. */
class EtcdAddressMaskingTest {

    @Test
    void listsAndIpv6HostsShowTheUserAndHideThePassword() {
        EtcdAddress a = EtcdAddress.parse(URI.create("etcd://root:p%40ss@h1:2379,h2;h3:2380/"));
        assertEquals("p@ss", a.password());
        assertEquals("etcd://root:***@h1:2379,h2;h3:2380", a.masked());
        assertEquals("etcd://root:***@[::1]:2379", EtcdAddress.parse(URI.create("etcd://root:pw@[::1]:2379")).masked());
        assertEquals("etcd://u:***@h:1", EtcdAddress.parse(URI.create("etcd://u:pa/ss@h:1")).masked());
    }

    @Test
    void refusedUrisNeverEchoThePassword() {
        for (String bad : new String[] {"etcd://root@h:1", "etcd://root:hunter2@h:1/some/path", "etcdx://root:hunter2@h:1"}) {
            TransferException e = assertThrows(TransferException.class, () -> EtcdAddress.parse(URI.create(bad)), bad);
            assertEquals(ErrorCode.CONFIG, e.code());
            assertFalse(e.getMessage().contains("hunter2") || e.getMessage().contains("root@"), e.getMessage());
            assertTrue(e.getMessage().contains("***@h:1"), e.getMessage());
        }
    }
}
