package org.tent4j.metadata.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** Needs no Redis: the address as messages show it, through the masking every backend shares. */
class RedisAddressMaskingTest {

    @Test
    void aPasswordWithARawSlashIsNotEchoedWhenTheUriIsRefused() {
        // the parser reads 'u:pa' as the authority and '/ss@h:1' as the path; the old mask stopped at the '/'
        TransferException e = assertThrows(TransferException.class, () -> RedisAddress.parse(URI.create("redis://u:pa/ss@h:1")));
        assertEquals(ErrorCode.CONFIG, e.code());
        assertFalse(e.getMessage().contains("pa/ss") || e.getMessage().contains("ss@"), e.getMessage());
        assertTrue(e.getMessage().contains("redis://u:***@h:1"), e.getMessage());
    }

    @Test
    void parsedAddressesShowTheUserAndHideThePassword() {
        assertEquals("redis://user:***@[::1]:6380/3", RedisAddress.parse(URI.create("redis://user:p%40ss@[::1]:6380/3")).masked());
        assertEquals("redis://:***@h:1", RedisAddress.parse(URI.create("redis://:pw@h:1")).masked());
    }
}
