package org.tent4j.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;
import java.net.URISyntaxException;

import org.junit.jupiter.api.Test;

/** Every URI form a metadata store is configured with, masked by the one implementation every backend uses. */
class CredentialsTest {

    @Test
    void userAndPasswordKeepTheUser() {
        assertEquals("etcd://root:***@10.0.0.1:2379", Credentials.mask("etcd://root:hunter2@10.0.0.1:2379"));
        assertEquals("redis://user:***@example.org:6380/3", Credentials.mask(URI.create("redis://user:hunter2@example.org:6380/3")));
        assertEquals("https://tent:***@h/metadata?x=1#f", Credentials.mask("https://tent:hunter2@h/metadata?x=1#f"));
    }

    @Test
    void aPasswordWithoutUserKeepsTheColon() {
        assertEquals("redis://:***@127.0.0.1:6379", Credentials.mask("redis://:hunter2@127.0.0.1:6379"));
    }

    @Test
    void aLoneUserInformationIsHiddenWhole() {
        // Redis reads it as a password, an HTTP endpoint may carry a token there
        assertEquals("redis://***@h:1", Credentials.mask("redis://hunter2@h:1"));
        assertEquals("http://***@h/m", Credentials.mask("http://token-hunter2@h/m"));
    }

    @Test
    void passwordsWithAtColonSlashOrPercentEncodingAreHiddenWhole() {
        assertEquals("redis://user:***@h:1/0", Credentials.mask("redis://user:p@ss:w@rd@h:1/0"));
        assertEquals("etcd://user:***@h:1", Credentials.mask(URI.create("etcd://user:p%40ss%3Aw%2F@h:1")));
        assertEquals("redis://user:***@h:1", Credentials.mask("redis://user:a/b?c#d@h:1"));
        assertEquals("redis://***@h:1", Credentials.mask("redis://hun@ter:2@h:1"));
        assertEquals("etcd://u:***@h", Credentials.mask("etcd://u:x://y@h"));
    }

    @Test
    void ipv6HostsStayReadable() {
        assertEquals("etcd://root:***@[::1]:2379", Credentials.mask("etcd://root:hunter2@[::1]:2379"));
        assertEquals("http://***@[fe80::1%25eth0]:80/m", Credentials.mask("http://hunter2@[fe80::1%25eth0]:80/m"));
        assertEquals("etcd://[::1]:2379,[::2]:2379", Credentials.mask("etcd://[::1]:2379,[::2]:2379"));
    }

    @Test
    void severalUrisAreMaskedEachOnItsOwn() {
        assertEquals("etcd://root:***@h1:2379,h2:2379,redis://:***@h3:6379;http://u:***@h4/m http://h5/m",
                Credentials.mask("etcd://root:pw1@h1:2379,h2:2379,redis://:pw2@h3:6379;http://u:pw3@h4/m http://h5/m"));
        assertEquals("etcds://u:***@h1:1,h2", Credentials.mask("etcds://u:pw@h1:1,h2"));
    }

    @Test
    void withoutCredentialsNothingChanges() {
        for (String plain : new String[] {"etcd://10.0.0.1:2379;10.0.0.2,h3:2380/", "redis://h:1/0", "p2p", "memory://",
                "http://h:8080/metadata?key=a@b", "http://[::1]:80/p@q", ""}) {
            assertEquals(plain, Credentials.mask(plain));
        }
        assertNull(Credentials.mask((String) null));
        assertEquals("null", Credentials.mask((URI) null));
    }

    @Test
    void aMalformedUriIsMaskedAnywayNeverEchoedRaw() {
        String bad = "redis://user:hunter 2@h:1/0";
        assertThrows(URISyntaxException.class, () -> new URI(bad));
        assertEquals("redis://user:***@h:1/0", Credentials.mask(bad));
        for (String worse : new String[] {"redis:/user:hunter2@h", "user:hunter2@h:1", "etcd://user:hunter2@h:nan/x y",
                "redis://user:hunter2@", "://user:hunter2@h", "http://user:hun%zzter2@h"}) {
            String masked = Credentials.mask(worse);
            assertFalse(masked.contains("hunter2") || masked.contains("hun%zzter2"), worse + " -> " + masked);
        }
    }
}
