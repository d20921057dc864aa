package mcphost

// ResultText is resultText, for the tests of the kinds of content.
var ResultText = resultText
