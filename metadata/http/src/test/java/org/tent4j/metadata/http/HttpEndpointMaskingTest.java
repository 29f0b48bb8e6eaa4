package org.tent4j.metadata.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;

/** Needs no server: the endpoint as messages show it, through the masking every backend shares. */
class HttpEndpointMaskingTest {

    @Test
    void aPasswordWithARawSlashIsNotEchoedWhenTheUriIsRefused() {
        // the parser reads 'u:pa' as the authority and '/ss@h:1/m' as the path; the old mask stopped at the '/'
        TransferException e = assertThrows(TransferException.class, () -> HttpEndpoint.parse(URI.create("http://u:pa/ss@h:1/m")));
        assertEquals(ErrorCode.CONFIG, e.code());
        assertFalse(e.getMessage().contains("pa/ss") || e.getMessage().contains("ss@"), e.getMessage());
        assertTrue(e.getMessage().contains("http://u:***@h:1/m"), e.getMessage());
    }

    @Test
    void parsedEndpointsHideThePasswordAndKeepTheAuthorizationWhole() {
        HttpEndpoint e = HttpEndpoint.parse(URI.create("http://tent:p%40ss@[::1]:8080/metadata"));
        assertEquals("http://tent:***@[::1]:8080/metadata", e.masked());
        assertEquals("Basic dGVudDpwQHNz", e.authorization());
        assertEquals("http://***@h:1/m", HttpEndpoint.parse(URI.create("http://token@h:1/m")).masked());
    }
}
