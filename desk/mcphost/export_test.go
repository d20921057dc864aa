package mcphost

// ResultText is resultText, for the tests of the kinds of content.
var ResultText = resultText

// Hide is hide, for the tests of what a server's echo may show.
var Hide = hide
