package amqpbus

// AckDelay lets tests wait out the coalesced acks' idle delay.
const AckDelay = ackDelay
