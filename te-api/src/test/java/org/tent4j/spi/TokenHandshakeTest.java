package org.tent4j.spi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.Arrays;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.Test;

class TokenHandshakeTest {
    private static final SecuritySettings TOKEN = SecuritySettings.builder().token("s3cret".getBytes()).build();

    @Test
    void bothSidesHoldingTheTokenVerifyEachOther() {
        TokenHandshake initiator = TOKEN.handshake(true);
        TokenHandshake acceptor = TOKEN.handshake(false);
        byte[] fromInitiator = initiator.proof(acceptor.hello());
        byte[] fromAcceptor = acceptor.proof(initiator.hello());
        assertTrue(acceptor.verify(fromInitiator));
        assertTrue(initiator.verify(fromAcceptor));
    }

    @Test
    void theProofIsStandardHmacSha256OverLabelRoleAndNonces() throws Exception {
        byte[] longToken = new byte[100]; // longer than a SHA-256 block: the key is hashed first
        Arrays.fill(longToken, (byte) 7);
        for (byte[] token : new byte[][] {"s3cret".getBytes(), longToken}) {
            SecuritySettings s = SecuritySettings.builder().token(token).build();
            TokenHandshake initiator = s.handshake(true);
            TokenHandshake acceptor = s.handshake(false);
            byte[] initiatorHello = initiator.hello();
            byte[] acceptorHello = acceptor.hello();
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token, "HmacSHA256"));
            ByteArrayOutputStream m = new ByteArrayOutputStream();
            m.writeBytes("tent4j token handshake v1".getBytes());
            m.write('I');
            m.write(acceptorHello, 4, 32);
            m.write(initiatorHello, 4, 32);
            assertArrayEquals(mac.doFinal(m.toByteArray()), initiator.proof(acceptorHello));
        }
    }

    @Test
    void aWrongTokenAReflectedProofOrAnEchoedNonceFail() {
        TokenHandshake acceptor = TOKEN.handshake(false);
        byte[] acceptorHello = acceptor.hello();
        TokenHandshake stranger = SecuritySettings.builder().token("guess".getBytes()).build().handshake(true);
        byte[] strangerHello = stranger.hello();
        byte[] forged = stranger.proof(acceptorHello);
        acceptor.proof(strangerHello);
        assertFalse(acceptor.verify(forged), "a proof made with another token");

        // reflection: the attacker (no token) opens a second connection to the same engine and sends it the first
        // connection's challenge as its own hello; the engine's answer is an acceptor's proof over other nonces,
        // which does not pass as the initiator's proof the first connection waits for
        TokenHandshake first = TOKEN.handshake(false);
        byte[] challenge = first.hello();
        byte[] attackerHello = Arrays.copyOf(challenge, challenge.length);
        attackerHello[4] ^= 1; // any nonce of the attacker's choosing
        first.proof(attackerHello);
        TokenHandshake second = TOKEN.handshake(false);
        byte[] reflected = second.proof(challenge);
        assertFalse(first.verify(reflected), "an acceptor's proof does not pass as an initiator's");

        TokenHandshake self = TOKEN.handshake(true);
        assertThrows(SecurityException.class, () -> self.proof(self.hello()));
        assertThrows(SecurityException.class, () -> self.proof("GET / HTTP/1.1\r\n\r\n123456789012345678".getBytes()));
        TokenHandshake shortProof = TOKEN.handshake(true);
        shortProof.proof(TOKEN.handshake(false).hello());
        assertFalse(shortProof.verify(new byte[31]));
    }

    @Test
    void theTokenIsNeverPrinted() {
        assertFalse(TOKEN.toString().contains("s3cret"));
    }
}
