package openai

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"

	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// The environment variables Azure reads (those of OpenAI's and Microsoft's
// own SDKs), and its default API version.
const (
	AzureAPIKeyEnv     = "AZURE_OPENAI_API_KEY"
	AzureEndpointEnv   = "AZURE_OPENAI_ENDPOINT"
	AzureAPIVersionEnv = "OPENAI_API_VERSION"
	// DefaultAzureAPIVersion is the newest generally available version of
	// Azure OpenAI's data-plane API that orca was written against: Chat
	// Completions with max_completion_tokens, stream_options (usage) and
	// json_schema response formats. A preview version (for what is newer)
	// is set with AzureAPIVersionEnv or Azure's apiVersion.
	DefaultAzureAPIVersion = "2024-10-21"
)

type azureConfig struct{ endpoint, apiVersion string }

// Azure sends the requests to Azure OpenAI's Chat Completions at endpoint
// (https://<resource>.openai.azure.com; default: BaseURL, else
// $AZURE_OPENAI_ENDPOINT), API version apiVersion (default:
// $OPENAI_API_VERSION, else DefaultAzureAPIVersion), through the SDK's
// azure package: a request for model M goes to
// /openai/deployments/M/chat/completions?api-version=…, so the model is the
// name of a deployment, and there is no default one: New needs Model. The
// key (APIKey, default $AZURE_OPENAI_API_KEY; OpenAI's variables are not
// read) goes in the api-key header, over https only — or plain http to this
// machine's loopback address (a local proxy or emulator), which the SDK
// allows there and nowhere else. Microsoft Entra ID tokens are not
// supported: they would need the Azure identity SDK.
func Azure(endpoint, apiVersion string) Option {
	return func(c *config) { c.azure = &azureConfig{endpoint: endpoint, apiVersion: apiVersion} }
}

// azureOptions are the SDK's options for Azure OpenAI.
func (c *config) azureOptions() ([]option.RequestOption, error) {
	key := os.Getenv(AzureAPIKeyEnv)
	if c.apiKey != nil {
		key = *c.apiKey
	}
	endpoint := cmp.Or(c.azure.endpoint, c.baseURL, os.Getenv(AzureEndpointEnv))
	if endpoint == "" || key == "" {
		return nil, fmt.Errorf("openai: Azure OpenAI needs its endpoint and an API key: set %s (https://<resource>.openai.azure.com) and %s",
			AzureEndpointEnv, AzureAPIKeyEnv)
	}
	if c.model == "" {
		return nil, fmt.Errorf("openai: Azure OpenAI needs the name of a deployment as the model (Model): it has no default")
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("openai: Azure OpenAI endpoint %q is not a URL: want https://<resource>.openai.azure.com", endpoint)
	}
	opts := []option.RequestOption{
		azure.WithEndpoint(endpoint, cmp.Or(c.azure.apiVersion, os.Getenv(AzureAPIVersionEnv), DefaultAzureAPIVersion)),
		azure.WithAPIKey(key),
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
		opts = append(opts, azure.WithUnsafeAllowHTTP())
	default:
		return nil, fmt.Errorf("openai: Azure OpenAI endpoint %q: the key is sent over https only (plain http only to localhost)", endpoint)
	}
	return opts, nil
}

// loopback reports whether host is this machine's, as the SDK's azure
// package decides for plain http: localhost or a loopback address.
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
