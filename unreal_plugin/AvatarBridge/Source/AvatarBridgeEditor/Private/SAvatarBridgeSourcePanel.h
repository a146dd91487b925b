// Creation panel of the Avatar Bridge source: a details view of FAvatarBridgeConnectionSettings (address, ports,
// the sessions to open with their pipeline, model, subject name and options, observe mode) and an Add button.

#pragma once

#include "CoreMinimal.h"
#include "Widgets/DeclarativeSyntaxSupport.h"
#include "Widgets/SCompoundWidget.h"

#include "AvatarBridgeSettings.h"

class FStructOnScope;
class IStructureDetailsView;

class SAvatarBridgeSourcePanel : public SCompoundWidget
{
public:
	DECLARE_DELEGATE_OneParam(FOnAddSource, const FAvatarBridgeConnectionSettings&);

	SLATE_BEGIN_ARGS(SAvatarBridgeSourcePanel) {}
		SLATE_EVENT(FOnAddSource, OnAddSource)
	SLATE_END_ARGS()

	void Construct(const FArguments& InArgs);

private:
	FReply OnAddClicked() const;

	FAvatarBridgeConnectionSettings Settings;
	TSharedPtr<FStructOnScope> SettingsScope;  // views Settings in place
	TSharedPtr<IStructureDetailsView> DetailsView;
	FOnAddSource OnAddSource;
};
