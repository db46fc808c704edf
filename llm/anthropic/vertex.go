package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/vertex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/orca-agent/orca/llm"
)

// The environment variables Vertex reads. Claude Code's (VertexProjectEnv,
// VertexRegionEnv) win over Google's (GoogleCloudProjectEnv,
// GoogleCloudLocationEnv, which llm/gemini reads for Vertex AI too), so
// that a Claude Code setup for Vertex AI works unchanged beside a Gemini
// one.
const (
	VertexProjectEnv       = "ANTHROPIC_VERTEX_PROJECT_ID"
	VertexRegionEnv        = "CLOUD_ML_REGION"
	GoogleCloudProjectEnv  = "GOOGLE_CLOUD_PROJECT"
	GoogleCloudLocationEnv = "GOOGLE_CLOUD_LOCATION"
	// GoogleCredentialsEnv names a key file of Application Default
	// Credentials (read by Google's libraries, named in the errors).
	GoogleCredentialsEnv = "GOOGLE_APPLICATION_CREDENTIALS"
)

// cloudPlatformScope is the OAuth scope of Vertex AI's requests.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

type vertexConfig struct{ project, region string }

// Vertex sends the requests to Claude on Google Cloud's Vertex AI, in
// project and region (default: $ANTHROPIC_VERTEX_PROJECT_ID, else
// $GOOGLE_CLOUD_PROJECT; $CLOUD_ML_REGION, else $GOOGLE_CLOUD_LOCATION;
// "global" is Vertex AI's global endpoint), signed with Application
// Default Credentials: gcloud auth application-default login, a key file
// in $GOOGLE_APPLICATION_CREDENTIALS, or the metadata server on Google
// Cloud. New looks the credentials up, and fails if there are none.
//
// The requests are the Messages API's, as the SDK's vertex package sends
// them: the model in the URL (publishers/anthropic/models/MODEL:
// streamRawPredict) rather than the body, the API version in the body
// (anthropic_version). The model ids are Vertex AI's: claude-sonnet-4-5@
// 20250929 for Claude 4.5 and older, the same bare ids as Anthropic's API
// (DefaultModel) for the later ones. BaseURL replaces the region's endpoint
// (a proxy's; the SDK adds /v1/projects/…); API keys are not used, and
// APIKey with Vertex is an error.
func Vertex(project, region string) Option {
	return func(c *config) { c.vertex = &vertexConfig{project: project, region: region} }
}

// vertexOptions are the SDK's options for Vertex AI: the HTTP client, if
// given, before the credentials (the SDK wraps it with them), the base
// URL, if given, after (it replaces the region's).
func (c *config) vertexOptions() ([]option.RequestOption, error) {
	project := cmp.Or(c.vertex.project, os.Getenv(VertexProjectEnv), os.Getenv(GoogleCloudProjectEnv))
	region := cmp.Or(c.vertex.region, os.Getenv(VertexRegionEnv), os.Getenv(GoogleCloudLocationEnv))
	if project == "" || region == "" {
		return nil, fmt.Errorf("anthropic: Claude on Vertex AI needs a project and a region: set %s (or %s) and %s (or %s; e.g. us-east5, or global)",
			VertexProjectEnv, GoogleCloudProjectEnv, VertexRegionEnv, GoogleCloudLocationEnv)
	}
	if c.apiKey != nil || c.keys != nil {
		return nil, errors.New("anthropic: Claude on Vertex AI takes no API key: it signs its requests with Google's Application Default Credentials")
	}
	ctx := context.Background()
	if c.http != nil {
		// The token requests go through the same client.
		ctx = context.WithValue(ctx, oauth2.HTTPClient, c.http)
	}
	creds, err := google.FindDefaultCredentials(ctx, cloudPlatformScope)
	if err != nil {
		return nil, fmt.Errorf("anthropic: Claude on Vertex AI signs in with Google's Application Default Credentials, and found none: "+
			"run gcloud auth application-default login, or set %s to a service account's key file (%v)", GoogleCredentialsEnv, err)
	}
	var opts []option.RequestOption
	if c.http != nil {
		opts = append(opts, option.WithHTTPClient(c.http))
	}
	withCreds, err := vertexCredentials(ctx, region, project, creds)
	if err != nil {
		return nil, err
	}
	opts = append(opts, withCreds)
	if c.baseURL != "" {
		opts = append(opts, option.WithBaseURL(c.baseURL))
	}
	return opts, nil
}

// vertexCredentials is vertex.WithCredentials, whose failure to build its
// HTTP client is a panic, as an error.
func vertexCredentials(ctx context.Context, region, project string, creds *google.Credentials) (opt option.RequestOption, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("anthropic: Claude on Vertex AI: %v", r)
		}
	}()
	return vertex.WithCredentials(ctx, region, project, creds), nil
}

// tokenError is a failure to get an access token from Google (a refresh
// token revoked, a key file's account deleted): an authentication error,
// which another try would not mend, that says how to sign in again.
func tokenError(err error) (*llm.Error, bool) {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return nil, false
	}
	return &llm.Error{
		Kind:    llm.KindAuthentication,
		Message: "Google gave no access token for Vertex AI (run gcloud auth application-default login, or check " + GoogleCredentialsEnv + "): " + re.Error(),
		Err:     err,
	}, true
}
